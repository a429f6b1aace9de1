"""The trace's inference load curve, driven on the box as the inference-scales scene drives it.

What it writes is what a serving team and its traffic would: the service's Deployment (the
scene's: the documented pod snippet plus one container asking for a whole node of the
inference pool's GPUs, box/scenes/inference_scales.py) with the replay's labels on
its pods, and the load: the HPA metric's series, SYNTHETIC, served by the box's series
exporter (box/series.py) that its Prometheus scrapes, set to each step's value at
the step's time divided by the speed. From there the real parts act: the rendered
prometheus-adapter serves the value, the HPA controller rescales the Deployment, the
scheduler binds the pods, the gate opens the providers' virtual nodes once the pool is full.

Before the trace clock starts, the curve's service is brought to rest and the replay waits
until the adapter serves the metric and the HPA reads it (ScalingActive): the adapter lists
new series once a minute of wall time, which at speed 10 would be ten minutes of trace in
which the curve did nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from box import monitoring
from box.kube import Kube, Obj, wait_for
from box.scenes.inference_scales import (
    ADAPTER_SECONDS,
    HPA_SECONDS,
    adapter_serves,
    read_hpa,
    scaling_active,
    service_deployment,
)
from box.series import SyntheticSeries, write_target
from generators.model.environment import Environment
from generators.model.overflow import InferenceService, inference_pools
from whatif.trace import Inference


class Serving:
    def __init__(
        self, kube: Kube, env: Environment, curve: Inference, box_folder: Path, labels: dict[str, str]
    ) -> None:
        assert env.overflow is not None  # the trace loader refuses a curve without a service
        self.kube, self.env, self.curve, self.box_folder = kube, env, curve, box_folder
        self.service: InferenceService = next(
            s for s in env.overflow.inference if s.deployment == curve.service
        )
        self.pod_labels = labels
        self.series_labels = {"namespace": self.service.namespace, **self.service.metric_selector}
        self.series: SyntheticSeries | None = None
        self.target_file: Path | None = None
        self.created = False
        self.next_step = 0

    def deployment(self, run: str) -> Obj:
        obj = service_deployment(self.env, self.service, inference_pools(self.env.pools)[0], run)
        obj["spec"]["template"]["metadata"]["labels"].update(self.pod_labels)
        return obj

    def start(self, run: str, say: Callable[[str], None]) -> None:
        """Deployment at rest and the load at 0, served through the aggregator and read by the HPA."""
        svc = self.service
        self.series = SyntheticSeries().start()
        self.series.set(svc.metric_name, self.series_labels, 0)
        self.target_file = write_target(
            monitoring.scene_targets(self.box_folder), f"whatif-{run}", self.series.target
        )
        say(f"inference: {svc.namespace}/{svc.deployment} at rest; waiting for the adapter and the HPA")
        self.kube.create(self.deployment(run))
        self.created = True
        wait_for(
            lambda: adapter_serves(self.kube, svc),
            ADAPTER_SECONDS,
            f"the adapter serving {svc.metric_name}",
            1.0,
        )
        wait_for(
            lambda: scaling_active(read_hpa(self.kube, svc)), HPA_SECONDS, "the HPA reading the metric", 1.0
        )

    def due(self, trace_seconds: float) -> None:
        """Set the load of every step whose time has come."""
        assert self.series is not None
        steps = self.curve.steps
        while self.next_step < len(steps) and steps[self.next_step][0] <= trace_seconds:
            self.series.set(self.service.metric_name, self.series_labels, steps[self.next_step][1])
            self.next_step += 1

    def stop(self) -> None:
        if self.created:
            self.kube.delete("apps/v1", "Deployment", self.service.deployment, self.service.namespace)
        if self.target_file is not None:
            self.target_file.unlink(missing_ok=True)
        if self.series is not None:
            self.series.stop()
