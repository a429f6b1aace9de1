"""Kubernetes shapes more than one component renders, and their templates (templates/common/).

A component's own objects live in generators/components/<name> with templates/<name>/; what
two components render alike lives here once: RBAC (rbac.py), CEL (cel.py), the node-update
guard (admission.py), pod hardening (hardening.py), the trainyard-gate program's workload
(workload.py), network policies (network.py), a Namespace, ConfigMap or ServiceMonitor
(objects.py). Resource quantities live with the model (generators/model/quantity.py), which
reads them and which this package reads. Nothing here imports a component, and
templates/common/ is rendered only from here (tests/test_component_homes.py).
"""
