"""trainyard's run-time controllers, one program: the overflow gate and the health quarantine."""
