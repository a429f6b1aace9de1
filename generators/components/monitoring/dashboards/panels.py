"""Thin helpers over grafana-foundation-sdk (0.0.21, dashboard schemaVersion 42).

Every panel queries the `datasource` variable; rows and panels get sequential ids so the
JSON is the same on every render. Dashboards are returned as plain dicts (the SDK's own
JSON encoding), ready to be dumped with sorted keys.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from grafana_foundation_sdk.builders import common as common_builders
from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.builders import prometheus, stat, table, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as dm
from grafana_foundation_sdk.models import prometheus as pm

from generators.components.monitoring.promql import Queries, quote
from generators.model.environment import Environment
from generators.model.monitoring import Monitoring

DATASOURCE = dm.DataSourceRef(type_val="prometheus", uid="${datasource}")
TAG = "trainyard"
# Grafana's unit for plain numbers (counts, 0/1 states, nodes): what most panels show, so the
# panel builders default to it and a panel names its unit only when it has one.
PLAIN = "none"
Panel = timeseries.Panel | stat.Panel | table.Panel
PanelT = TypeVar("PanelT", timeseries.Panel, stat.Panel, table.Panel)


def legend(name: str) -> str:
    """Legend text that Grafana replaces with the value of label `name`."""
    return "{{" + name + "}}"


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str = ""


def per(aggregation: str, expr: str, *labels: str) -> Query:
    """`expr` aggregated by `labels`, one line per label set, legended by those labels."""
    return Query(f"{aggregation} by ({', '.join(labels)}) ({expr})", " ".join(legend(x) for x in labels))


def per_interval(counter: str, *labels: str) -> Query:
    """A counter's increase per graph interval, summed by `labels` (legended by them)."""
    return per("sum", f"increase({counter}[$__rate_interval])", *labels)


def _target(query: Query, ref: str, *, instant: bool) -> prometheus.Dataquery:
    target = prometheus.Dataquery().expr(query.expr).ref_id(ref).datasource(DATASOURCE)
    if query.legend:
        target = target.legend_format(query.legend)
    if instant:
        target = target.instant().format(pm.PromQueryFormat.TABLE)
    return target


def _framed(panel: PanelT, title: str, description: str, unit: str, span: int, height: int) -> PanelT:
    """What every panel sets alike: its texts, the datasource variable, unit and size."""
    return (
        panel.title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .span(span)
        .height(height)
    )


def _targets(panel: PanelT, queries: list[Query], *, instant: bool = False) -> PanelT:
    for index, query in enumerate(queries):
        panel = panel.with_target(_target(query, chr(ord("A") + index), instant=instant))
    return panel


def _steps(limit: float | None, color: str = "red") -> dash.ThresholdsConfig:
    steps = [dm.Threshold(value=None, color="green")]
    if limit is not None:
        steps.append(dm.Threshold(value=limit, color=color))
    return dash.ThresholdsConfig().mode(dm.ThresholdsMode.ABSOLUTE).steps(steps)


def graph(
    title: str,
    description: str,
    queries: list[Query],
    *,
    unit: str = PLAIN,
    limit: float | None = None,
    span: int = 12,
    height: int = 8,
    stacked: bool = False,
) -> timeseries.Panel:
    """A time series; `limit` draws a red threshold line (e.g. the temperature limit)."""
    panel = (
        _framed(timeseries.Panel(), title, description, unit, span, height)
        .fill_opacity(10)
        .legend(
            common_builders.VizLegendOptions()
            .show_legend(True)
            .display_mode(common.LegendDisplayMode.LIST)
            .placement(common.LegendPlacement.BOTTOM)
        )
        .tooltip(
            common_builders.VizTooltipOptions()
            .mode(common.TooltipDisplayMode.MULTI)
            .sort(common.SortOrder.DESCENDING)
        )
        .thresholds(_steps(limit))
    )
    if limit is not None:
        panel = panel.thresholds_style(
            common_builders.GraphThresholdsStyleConfig().mode(common.GraphThresholdsStyleMode.LINE)
        )
    if stacked:
        panel = panel.stacking(common_builders.StackingConfig().mode(common.StackingMode.NORMAL))
    return _targets(panel, queries)


def single(
    title: str,
    description: str,
    query: Query,
    *,
    unit: str = PLAIN,
    limit: float | None = None,
    calc: str = "lastNotNull",
    span: int = 6,
    height: int = 8,
) -> stat.Panel:
    """A stat reducing the series with `calc` (lastNotNull, max ...); turns red at `limit`."""
    panel = (
        _framed(stat.Panel(), title, description, unit, span, height)
        .thresholds(_steps(limit))
        .reduce_options(common_builders.ReduceDataOptions().calcs([calc]).values(False))
    )
    return _targets(panel, [query])


def gauge_by(title: str, description: str, gauge: str, *labels: str, span: int = 12) -> timeseries.Panel:
    """A gauge drawn per label set, one line each (`max` by `labels`: a series that two pods
    export, such as a controller's replicas, is still one line)."""
    return graph(title, description, [per("max", gauge, *labels)], span=span)


def increase_by(
    title: str, description: str, counter: str, *labels: str, span: int = 12, stacked: bool = False
) -> timeseries.Panel:
    """Events per graph interval: a counter's increase summed by `labels`, one line each."""
    return graph(title, description, [per_interval(counter, *labels)], span=span, stacked=stacked)


def count(
    title: str, description: str, selection: str, *, limit: float | None = None, span: int = 6
) -> stat.Panel:
    """How many series `selection` returns now, as a stat that reads 0 when there are none
    (count() over no series returns none, which Grafana would show as 'No data', not 0)."""
    return single(title, description, Query(f"count({selection}) or vector(0)"), limit=limit, span=span)


def grid(
    title: str,
    description: str,
    queries: list[Query],
    columns: list[str],
    *,
    unit: str = PLAIN,
    descending: bool = True,
    span: int = 12,
    height: int = 8,
) -> table.Panel:
    """A table of instant values: one row per label set, one value column per query, named
    by `columns` and sorted by the first of them."""
    values = ["Value"] if len(queries) == 1 else [f"Value #{chr(ord('A') + i)}" for i in range(len(queries))]
    rename = dict(zip(values, columns, strict=True))
    sort = common_builders.TableSortByFieldState().display_name(columns[0]).desc(descending)
    panel = _framed(table.Panel(), title, description, unit, span, height).sort_by([sort])
    if len(queries) > 1:  # one frame per query: join them on their labels
        panel = panel.with_transformation(dm.DataTransformerConfig(id_val="merge", options={}))
    panel = panel.with_transformation(
        dm.DataTransformerConfig(
            id_val="organize", options={"excludeByName": {"Time": True}, "renameByName": rename}
        )
    )
    return _targets(panel, queries, instant=True)


def matches(label_name: str, variable: str) -> str:
    """The matcher that filters `label_name` by a query_variable's selection."""
    return f"{label_name}=~{quote('$' + variable)}"


def datasource_variable() -> dash.DatasourceVariable:
    return dash.DatasourceVariable("datasource").label("Data source").type("prometheus")


def query_variable(name: str, label: str, series: str, label_name: str) -> dash.QueryVariable:
    """A variable of the values of `label_name` on `series`; multi-select with All = `.*`
    (a regex: queries filter with matches())."""
    query = f"label_values({series}, {label_name})"
    return (
        dash.QueryVariable(name)
        .label(label)
        .datasource(DATASOURCE)
        .query(query)
        .definition(query)
        .multi(True)
        .include_all(True)
        .all_value(".*")
        .refresh(dm.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(dm.VariableSort.ALPHABETICAL_ASC)
    )


@dataclass
class Board:
    """A dashboard being assembled: rows of panels, each with the next id."""

    m: Monitoring
    slug: str
    title: str
    description: str
    variables: list[Any] = field(default_factory=list)
    rows: list[tuple[str, list[Panel]]] = field(default_factory=list)

    def row(self, title: str, *panels: Panel) -> Board:
        self.rows.append((title, list(panels)))
        return self

    def build(self) -> dict[str, Any]:
        builder = (
            dash.Dashboard(self.title)
            .uid(self.m.dashboard_uid(self.slug))
            .description(self.description)
            .tags([TAG])
            .readonly()
            .timezone("browser")
            .time("now-6h", "now")
            .refresh(self.m.dashboards.refresh)
            .tooltip(dm.DashboardCursorSync.CROSSHAIR)
            .link(
                dash.DashboardLink("Trainyard dashboards")
                .type(dm.DashboardLinkType.DASHBOARDS)
                .tags([TAG])
                .as_dropdown(True)
                .include_vars(False)
                .keep_time(True)
            )
            .with_variable(datasource_variable())
        )
        for variable in self.variables:
            builder = builder.with_variable(variable)
        next_id = 1
        for title, panels in self.rows:
            builder = builder.with_row(dash.Row(title).id(next_id))
            next_id += 1
            for panel in panels:
                builder = builder.with_panel(panel.id(next_id))
                next_id += 1
        encoded: dict[str, Any] = json.loads(json.dumps(builder.build(), cls=JSONEncoder))
        return encoded


Rows = Callable[[Queries], list[Panel]]


@dataclass(frozen=True)
class Dashboard:
    """One dashboard as a declaration: its slug (-> stable UID), title, description (a template
    over the monitoring settings, `{m.gpu_temp_limit_celsius}`), variables and rows of panels;
    `build` is the only place a dashboard is assembled."""

    slug: str
    title: str
    description: str
    rows: tuple[tuple[str, Rows], ...]
    variables: Callable[[Queries], list[Any]] = lambda q: []

    def build(self, env: Environment) -> dict[str, Any]:
        q = Queries(env)
        board = Board(q.m, self.slug, self.title, self.description.format(m=q.m), self.variables(q))
        for title, panels in self.rows:
            board.row(title, *panels(q))
        return board.build()
