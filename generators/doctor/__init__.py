"""`generate.py doctor` against a cluster: what the API server says (kubeapi.py reads a
kubeconfig as kubectl does and speaks plain HTTPS) checked against this environment's model
and render (cluster.py, one function per kind of gap). The Prometheus half lives in
generators/validation/doctor.py."""
