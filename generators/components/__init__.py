"""One component per rendered/<env>/<component>/ folder, and nothing else lives here.

A component is a module (or a package, when it has parts: monitoring/, overflow/) named as
its folder under rendered/, with one entry point:

    def generate(env: Environment, earlier: Sequence[Obj]) -> list[Obj]

`earlier` holds the objects of the components before it in registry.COMPONENTS (only
argocd, last, reads them: its project whitelists and ignoreDifferences describe the rest).
A component may also define `installer_inputs(env)` for rendered/<env>/installers/. The
registry finds every module here (registry.discover: no list to extend);
docs/components.md says what to touch to add one. `Obj`, the object type, is
generators/k8s/objects.py's.
"""
