"""The kept list of mutations for `python -m tests.mutation.run` (docs/testing.md).

Each is one plausible bug: a named, exact edit of one source file (`old` must occur exactly
once, so a list that drifted from the code fails loudly instead of testing nothing), and the
promise it breaks. They cover the model, components, templates, gate, policies, the YAML
emitter, sync-inventory, the diff engine and the spec's cross-field checks; the first five
once escaped every behavioural test, the last 27 were written before
the tests of the seven areas where one-line bugs had passed the whole suite
(docs/testing.md, "The seven areas").
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str  # relative to the repository root
    old: str
    new: str
    breaks: str  # the promise this bug breaks, in words


MUTATIONS: tuple[Mutation, ...] = (
    # --- the five that once escaped every behavioural test ---------------------------------
    Mutation(
        "quota-lending-rounded",
        "generators/model/quota.py",
        "own * team.lendable_percent // 100",
        "round(own * team.lendable_percent / 100)",
        "lendingLimit = floor(nodes x lendablePercent / 100) nodes",
    ),
    Mutation(
        "priorityclass-preemption-hardcoded",
        "templates/priorities/priorityclass.yaml.j2",
        "preemptionPolicy: {{ tier.preemption_policy | y }}",
        "preemptionPolicy: PreemptLowerPriority",
        "a tier with preemptionPolicy Never renders Never",
    ),
    Mutation(
        "default-tier-wrong-end",
        "generators/model/environment.py",
        "return self.training_tiers[-1]",
        "return self.training_tiers[0]",
        "a class-less training pod gets the LOWEST training tier",
    ),
    Mutation(
        "cohort-drops-parent",
        "templates/kueue/cohort.yaml.j2",
        "{% if cohort.parent %}\n  parentName",
        "{% if false %}\n  parentName",
        "a cohort with a parent renders spec.parentName (the cohort tree)",
    ),
    Mutation(
        "gate-timer-carried-across-change",
        "gate/trainyard_gate/overflow/hysteresis.py",
        "return GateMemory(target), Decision(",
        "return GateMemory(target, since), Decision(",
        "after a state change the hold timer of the next change starts afresh",
    ),
    # --- quota formulas ---------------------------------------------------------------------
    Mutation(
        "quota-borrow-ceiling-rounded-up",
        "generators/model/quota.py",
        "ceiling = pool.schedulable_nodes * team.max_usage_percent // 100",
        "ceiling = -(-pool.schedulable_nodes * team.max_usage_percent // 100)",
        "borrowingLimit uses floor(schedulable x maxUsagePercent / 100)",
    ),
    Mutation(
        "quota-borrow-not-minus-own",
        "generators/model/quota.py",
        "return max(0, ceiling - own)",
        "return max(0, ceiling)",
        "borrowingLimit = ceiling - own nodes",
    ),
    Mutation(
        "quota-borrow-negative",
        "generators/model/quota.py",
        "return max(0, ceiling - own)",
        "return ceiling - own",
        "borrowingLimit is never negative (own share above maxUsagePercent)",
    ),
    Mutation(
        "quota-reserve-ignored",
        "generators/model/types.py",
        "return self.nodes - self.reserve_nodes",
        "return self.nodes",
        "reserveNodes are kept out of quota",
    ),
    Mutation(
        "apportion-file-order",
        "generators/model/quota.py",
        "ordered = sorted(teams, key=lambda t: t.name)",
        "ordered = list(teams)",
        "largest-remainder ties go by team name, not file order",
    ),
    Mutation(
        "apportion-leftover-to-smallest",
        "generators/model/apportion.py",
        "key=lambda i: (-quotients[i][1], i)",
        "key=lambda i: (quotients[i][1], i)",
        "leftover nodes go to the largest remainders",
    ),
    Mutation(
        "quota-nominal-drops-extras",
        "generators/model/quota.py",
        "own * pool.per_node.get(r.name, Fraction(0)),",
        "own * pool.per_node.get(r.name, Fraction(0)) if r.name != 'rdma/ib' else Fraction(0),",
        "every resource of a pool (extras such as rdma/ib included) gets nominal quota",
    ),
    Mutation(
        "clusterqueue-drops-lending-limit",
        "templates/kueue/clusterqueue.yaml.j2",
        "{% if cell.lendingLimit is not none %}",
        "{% if false %}",
        "lendablePercent renders lendingLimit",
    ),
    Mutation(
        "clusterqueue-drops-cohort",
        "templates/kueue/clusterqueue.yaml.j2",
        "{% if team.cohort %}",
        "{% if false %}",
        "a team's queue joins its cohort",
    ),
    Mutation(
        "borrow-threshold-off-by-one",
        "generators/model/build.py",
        'max(t.value for t in tiers if t.role == "inference"),',
        'max(t.value for t in tiers if t.role == "inference") + 1,',
        "maxPriorityThreshold = the highest inference tier value",
    ),
    Mutation(
        "borrow-threshold-from-training",
        "generators/model/build.py",
        'max(t.value for t in tiers if t.role == "inference"),',
        'min(t.value for t in tiers if t.role == "training"),',
        "borrowing training preempts only inference tiers",
    ),
    # --- tiers, namespaces ------------------------------------------------------------------
    Mutation(
        "workloadpriorityclass-value-scaled",
        "templates/priorities/workloadpriorityclass.yaml.j2",
        "value: {{ tier.value | y }}",
        "value: {{ (tier.value // 10) | y }}",
        "PriorityClass and WorkloadPriorityClass carry the tier's one value",
    ),
    Mutation(
        "training-namespaces-ignore-borrow",
        "generators/model/environment.py",
        "for pool in (*t.shares, *t.borrow_from))",
        "for pool in (*t.shares,))",
        "a team that only borrows a training pool is a training namespace",
    ),
    Mutation(
        "admission-default-preemption-never",
        "generators/components/priorities.py",
        'preemptionPolicy: {literal(tier.preemption_policy)}}}}}"',
        "preemptionPolicy: 'Never'}}}}\"",
        "the mutating policy sets the default tier's preemptionPolicy",
    ),
    # --- TAS split, flavors, Kueue configuration -------------------------------------------
    Mutation(
        "tas-queue-not-topology",
        "generators/model/quota.py",
        "queues.append(ClusterQueue(team.name, team.name, True, tas))",
        "queues.append(ClusterQueue(team.name, team.name, False, tas))",
        "the topology queue is marked topology (placement annotation)",
    ),
    Mutation(
        "tas-flex-same-name",
        "generators/model/quota.py",
        "flex_queue(team.name) if tas else team.name",
        "team.name",
        "plain pools go to <team>-flex when the team has a topology pool",
    ),
    Mutation(
        "resourceflavor-drops-topology",
        "templates/kueue/resourceflavor.yaml.j2",
        "{% if pool.topology_levels %}\n  topologyName",
        "{% if false %}\n  topologyName",
        "a topology pool's flavor names its Topology",
    ),
    Mutation(
        "topology-levels-reversed",
        "templates/kueue/topology.yaml.j2",
        "{% for level in pool.topology_levels %}",
        "{% for level in pool.topology_levels | reverse %}",
        "Topology levels coarsest first, as the spec lists them",
    ),
    Mutation(
        "kueue-block-admission-hardcoded",
        "templates/kueue/configuration.yaml.j2",
        "blockAdmission: {{ kueue.wait_for_pods_ready.block_admission | y }}",
        "blockAdmission: false",
        "waitForPodsReady.blockAdmission is the environment's",
    ),
    # --- overflow: gate thresholds, stagger, fill order, descheduler ------------------------
    Mutation(
        "stagger-step-wrong-divisor",
        "generators/model/overflow.py",
        'gate["openWhenFreeGpusBelow"] // providers',
        'gate["openWhenFreeGpusBelow"] // (providers + 1)',
        "stagger step = openWhenFreeGpusBelow // providers",
    ),
    Mutation(
        "band-close-not-staggered",
        "generators/model/overflow.py",
        'close_when_free_gpus_at_least=gate["closeWhenFreeGpusAtLeast"] - rank * step,',
        'close_when_free_gpus_at_least=gate["closeWhenFreeGpusAtLeast"],',
        "less-preferred providers close at fewer free GPUs",
    ),
    Mutation(
        "band-open-seconds-not-staggered",
        "generators/model/overflow.py",
        'open_after_seconds=gate["openAfterSeconds"] + rank * gate["staggerOpenSeconds"],',
        'open_after_seconds=gate["openAfterSeconds"],',
        "less-preferred providers open later",
    ),
    Mutation(
        "fill-order-dearest-first",
        "generators/model/overflow.py",
        'key=lambda p: (p["preference"], p["costPerGpuHourUsd"], p["name"])',
        'key=lambda p: (p["preference"], -p["costPerGpuHourUsd"], p["name"])',
        "at equal preference the cheapest provider fills first",
    ),
    Mutation(
        "affinity-weight-flat",
        "generators/model/overflow.py",
        "PROVIDER_WEIGHT_SPAN * (providers - rank) // providers",
        "PROVIDER_WEIGHT_SPAN",
        "inference prefers providers in fill order (weights fall with rank)",
    ),
    Mutation(
        "descheduler-threshold-no-plus-one",
        "generators/model/overflow.py",
        'return max(t.value for t in tiers if t.role == "inference") + 1',
        'return max(t.value for t in tiers if t.role == "inference")',
        "priorityThreshold = highest inference tier + 1 (the top inference tier is evicted)",
    ),
    Mutation(
        "descheduler-nodefit-off",
        "templates/overflow/deschedulerpolicy.yaml.j2",
        "nodeFit: true",
        "nodeFit: false",
        "migrate-back evicts only pods that fit in the cluster",
    ),
    Mutation(
        "gate-taint-noexecute",
        "templates/overflow/taintpolicy.yaml.j2",
        "      effect: NoSchedule",
        "      effect: NoExecute",
        "the gate taint is NoSchedule, never NoExecute",
    ),
    Mutation(
        "inference-pools-include-training",
        "generators/model/overflow.py",
        "return tuple(p for p in pools if p.role in INFERENCE_ROLES",
        "return tuple(p for p in pools if p.role in (*INFERENCE_ROLES, 'training')",
        "free GPUs count only pools inference can use",
    ),
    Mutation(
        "prefer-no-schedule-blocks",
        "generators/model/overflow.py",
        'return effect != "PreferNoSchedule" and key',
        "return key",
        "a PreferNoSchedule pool taint does not keep inference off",
    ),
    # --- gate state machine ------------------------------------------------------------------
    Mutation(
        "gate-close-strict",
        "gate/trainyard_gate/overflow/hysteresis.py",
        "if state is GateState.OPEN and free_gpus >= close_at:",
        "if state is GateState.OPEN and free_gpus > close_at:",
        "close when free >= closeWhenFreeGpusAtLeast",
    ),
    Mutation(
        "gate-open-inclusive",
        "gate/trainyard_gate/overflow/hysteresis.py",
        "if state is GateState.CLOSED and free_gpus < open_below:",
        "if state is GateState.CLOSED and free_gpus <= open_below:",
        "open when free < openWhenFreeGpusBelow",
    ),
    Mutation(
        "gate-hold-times-swapped",
        "gate/trainyard_gate/overflow/hysteresis.py",
        "thresholds.close_after_seconds if target is GateState.CLOSED else thresholds.open_after_seconds",
        "thresholds.open_after_seconds if target is GateState.CLOSED else thresholds.close_after_seconds",
        "closing waits closeAfterSeconds, opening openAfterSeconds",
    ),
    Mutation(
        "gate-unavailable-close-ignored",
        "gate/trainyard_gate/overflow/hysteresis.py",
        "if on_unavailable is OnUnavailable.CLOSE and state is GateState.OPEN:",
        "if on_unavailable is OnUnavailable.HOLD and state is GateState.OPEN:",
        "onPrometheusUnavailable close counts toward closing",
    ),
    Mutation(
        "gate-hold-strict",
        "gate/trainyard_gate/overflow/hysteresis.py",
        "    if held >= required:\n",
        "    if held > required:\n",
        "a condition held exactly the hold time changes the state",
    ),
    # --- health: cap, release ---------------------------------------------------------------
    Mutation(
        "health-pool-cap-rounded-up",
        "gate/trainyard_gate/health/policy.py",
        "share = int(self.max_percent_of_pool * pool_nodes // 100)",
        "share = -int(-self.max_percent_of_pool * pool_nodes // 100)",
        "pool cap = floor(maxPercentOfPool x nodes / 100), at least one node",
    ),
    Mutation(
        "health-fleet-cap-off-by-one",
        "gate/trainyard_gate/health/state.py",
        "fits = fleet + 1 <= self.policy.cap.max_nodes",
        "fits = fleet <= self.policy.cap.max_nodes",
        "never more than maxNodes quarantined",
    ),
    Mutation(
        "health-newest-first",
        "gate/trainyard_gate/health/state.py",
        "        return sorted(due)\n",
        "        return sorted(due, reverse=True)\n",
        "the cap admits the oldest-bad node first",
    ),
    Mutation(
        "health-release-while-bad",
        "gate/trainyard_gate/health/state.py",
        "entry.good_since = run_start(entry.good_since, good, now)",
        "entry.good_since = run_start(entry.good_since, True, now)",
        "release only after releaseAfterSeconds of good readings",
    ),
    Mutation(
        "health-outage-keeps-timers",
        "gate/trainyard_gate/health/state.py",
        "            self._bad_since.clear()\n",
        "            self._bad_since.copy()\n",
        "a failed query restarts every quarantine timer",
    ),
    # --- YAML 1.1 / 1.2 quoting, quantities --------------------------------------------------
    Mutation(
        "yaml12-numbers-unquoted",
        "generators/output/yamlemit.py",
        "and not _looks_numeric_in_yaml12(text)",
        "and True",
        "strings a YAML 1.2 reader takes for numbers (1e3, 0o17) are quoted",
    ),
    Mutation(
        "yaml11-resolver-ignored",
        "generators/output/yamlemit.py",
        "and _RESOLVER.resolve(yaml.ScalarNode, text, (True, False)) == _STR_TAG"
        "  # type: ignore[no-untyped-call]",
        "and True",
        "strings YAML 1.1 reads as bool/null/number (yes, on, null, 1_000) are quoted",
    ),
    Mutation(
        "quantity-binary-never",
        "generators/model/quantity.py",
        'if fmt == "binary" and value.denominator == 1',
        "if False and value.denominator == 1",
        "memory quotas print in the apiserver's canonical binary form (1Ti)",
    ),
    # --- sync-inventory -----------------------------------------------------------------------
    Mutation(
        "sync-counts-cordoned",
        "generators/inventory/census.py",
        '    if node.unschedulable:\n        return "cordoned"',
        '    if False:\n        return "cordoned"',
        "a cordoned node is counted out of quota",
    ),
    Mutation(
        "sync-quarantine-counted",
        "generators/inventory/census.py",
        "if taint.key == QUARANTINE_TAINT_KEY and taint.effect in BLOCKING_EFFECTS:",
        "if taint.key == QUARANTINE_TAINT_KEY and False:",
        "a quarantined node is counted out, with its reason",
    ),
    Mutation(
        "sync-drop-guard-off",
        "generators/inventory/sync.py",
        "Fraction(update.before - update.after, update.before) > max_drop",
        "Fraction(update.before - update.after, update.before) > 2 * max_drop",
        "a pool losing more than --max-drop-fraction at once is refused",
    ),
    # --- policies (one each) -------------------------------------------------------------------
    Mutation(
        "policy-quota-conservation-lenient",
        "policies/quota_conservation.py",
        "if total > capacity:",
        "if total > 2 * capacity:",
        "quota-conservation refuses quotas above capacity",
    ),
    Mutation(
        "policy-quantities-int64",
        "policies/quantities.py",
        "if scaled > INT64_MAX:",
        "if scaled > 2 * INT64_MAX:",
        "quantities refuses values past int64",
    ),
    Mutation(
        "policy-references-cohort-parent",
        "policies/references.py",
        'yield from _missing(item, "spec.parentName", "Cohort", item.spec.get("parentName"), cohorts)',
        "yield from ()",
        "references resolves Cohort.spec.parentName",
    ),
    Mutation(
        "policy-kueue-rules-lending",
        "policies/kueue_rules.py",
        "and lending > nominal:",
        "and lending > 2 * nominal:",
        "kueue-rules refuses lendingLimit above nominalQuota",
    ),
    Mutation(
        "policy-placement-mixed",
        "policies/placement.py",
        "if with_topology and plain:",
        "if False:",
        "placement refuses a queue mixing topology and plain flavors",
    ),
    Mutation(
        "policy-gate-query-vector",
        "policies/gate_query.py",
        r'_FROM_NOTHING = re.compile(r"\b(vector|absent|absent_over_time)\s*\(")',
        r'_FROM_NOTHING = re.compile(r"\b(absent|absent_over_time)\s*\(")',
        "gate-query refuses `or vector(0)`",
    ),
    Mutation(
        "policy-quarantine-keyless-exists",
        "policies/quarantine.py",
        'return toleration.get("operator") == "Exists" and',
        "return False and",
        "quarantine refuses a key-less Exists toleration on a flavor",
    ),
    Mutation(
        "policy-rbac-cluster-admin",
        "policies/rbac.py",
        'if ref.get("name") == "cluster-admin":',
        'if ref.get("name") == "cluster-admin-x":',
        "rbac refuses bindings to cluster-admin",
    ),
    Mutation(
        "policy-taints-noexecute",
        "policies/taints.py",
        'if taint.get("effect") == "NoExecute":',
        'if taint.get("effect") == "NoExecute-x":',
        "taints refuses a NoExecute gate taint",
    ),
    Mutation(
        "policy-workloads-root",
        "policies/workloads.py",
        'if effective("runAsNonRoot") is not True:',
        'if effective("runAsNonRoot") is False:',
        "workloads requires runAsNonRoot",
    ),
    Mutation(
        "policy-size-configmap",
        "policies/size.py",
        "(data := configmap_bytes(item.obj)) >= CONFIGMAP_MAX_BYTES",
        "(data := configmap_bytes(item.obj)) >= 2 * CONFIGMAP_MAX_BYTES",
        "size refuses ConfigMaps over 1 MiB",
    ),
    Mutation(
        "policy-names-label-length",
        "policies/names.py",
        "return len(name) <= LABEL_MAX and bool(DNS_LABEL.match(name))",
        "return bool(DNS_LABEL.match(name))",
        "names refuses DNS labels over 63 characters",
    ),
    Mutation(
        "policy-sync-waves-order",
        "policies/sync_waves.py",
        "if item in waves and waves[item] <= last:",
        "if item in waves and waves[item] < last:",
        "sync-waves refuses an object in the same wave as what it needs",
    ),
    Mutation(
        "policy-priorities-range",
        "policies/priorities.py",
        "elif not low <= value <= high:",
        "elif False:",
        "priorities refuses values outside the allowed range",
    ),
    Mutation(
        "policy-dcgm-counters-type",
        "policies/dcgm_counters.py",
        "elif fields[1] not in PROM_TYPES:",
        "elif False:",
        "dcgm-counters refuses an unknown Prometheus type",
    ),
    # --- which pods are Kueue's (components/priorities.py "Scope") -----------------------------
    Mutation(
        "priority-queue-label-always-counts",
        "generators/components/priorities.py",
        "    if set(env.kueue.integrations) & set(POD_INTEGRATIONS):\n"
        "        keys += [QUEUE_LABEL, MANAGED_LABEL]",
        "    keys += [QUEUE_LABEL, MANAGED_LABEL]",
        "a plain pod with a queue label is not Kueue's unless a pod-based integration is on",
    ),
    Mutation(
        "priority-lowest-tier-is-highest",
        "generators/components/priorities.py",
        "return min(env.tiers, key=lambda t: t.value)",
        "return max(env.tiers, key=lambda t: t.value)",
        "a pod outside Kueue in a training namespace runs at the spec's lowest tier",
    ),
    # --- where one-line bugs still passed the whole suite (written before their tests) ------
    # the diff engine on lists keyed by name
    Mutation(
        "diff-keyed-removed-item-lost",
        "generators/diff/fields.py",
        "        if key not in new:\n            out.append(FieldChange((*path, i), item, MISSING))",
        "        if key not in old:\n            out.append(FieldChange((*path, i), item, MISSING))",
        "an item removed from a keyed list (a flavor, a taint, a rule) is reported removed",
    ),
    Mutation(
        "diff-keyed-duplicates-collapse",
        "generators/diff/fields.py",
        "if present and all(len({_key(i, fields) for i in side}) == len(side) for side in (before, after)):",
        "if present:",
        "a list whose key repeats is compared by index, not collapsed to one item per key",
    ),
    Mutation(
        "diff-keyed-matched-by-index",
        "generators/diff/fields.py",
        "out += changed_fields(old[key][1] if key in old else MISSING, item, (*path, i))",
        "out += changed_fields(before[i] if i < len(before) else MISSING, item, (*path, i))",
        "a kept item of a keyed list is compared with the item of the same key, not index",
    ),
    Mutation(
        "diff-keyed-order-ignored",
        "generators/diff/fields.py",
        "kept_new = [k for k in new if k in old]",
        "kept_new = [k for k in old if k in new]",
        "a keyed list whose order alone changed (Kueue tries flavors in order) is a change",
    ),
    Mutation(
        "diff-bool-equals-int",
        "generators/diff/fields.py",
        "    if type(before) is type(after) and before == after:\n        return []",
        "    if before == after:\n        return []",
        "a value changing type (1 -> true, 1 -> 1.0) is a change",
    ),
    # the YAML emitter's block scalars
    Mutation(
        "yaml-block-blank-lines-indented",
        "generators/output/yamlemit.py",
        'lines = [f"{indent}{line}" if line else "" for line in body.split("\\n")]',
        'lines = [f"{indent}{line}" for line in body.split("\\n")]',
        "no emitted line ends in a blank (an empty line of a literal block is empty)",
    ),
    Mutation(
        "yaml-block-leading-space",
        "generators/output/yamlemit.py",
        'or text.startswith((" ", "\\n")):',
        'or text.startswith("\\n"):',
        "a multi-line string whose first line starts with a blank is read back exactly",
    ),
    Mutation(
        "yaml-block-chomp-swapped",
        "generators/output/yamlemit.py",
        'chomp = "" if value.endswith("\\n") else "-"',
        'chomp = "-" if value.endswith("\\n") else ""',
        "a literal block keeps exactly the string's final newline, or none",
    ),
    Mutation(
        "yaml-block-not-indented",
        "generators/output/yamlemit.py",
        "return _block(item, indent + _INDENT)",
        "return _block(item, indent)",
        "a literal block's lines are indented under their key or dash",
    ),
    # the spec's cross-field checks: the cohort graph, the share sums
    Mutation(
        "spec-shares-under-100-accepted",
        "generators/model/checks/semantics.py",
        "            if total != 100:",
        "            if total > 100:",
        "team shares of a pool summing under 100% are refused (quota below capacity)",
    ),
    Mutation(
        "spec-shares-last-team-wins",
        "generators/model/checks/semantics.py",
        "totals[pool] += int(share)",
        "totals[pool] = int(share)",
        "the share sum of a pool adds every team's share",
    ),
    Mutation(
        "spec-cohort-root-one-step",
        "generators/model/checks/semantics.py",
        "        while cohort is not None and parents.get(cohort) is not None and cohort not in seen:",
        "        if cohort is not None and parents.get(cohort) is not None and cohort not in seen:",
        "borrowing works across a cohort tree of any depth (the root, not the parent)",
    ),
    Mutation(
        "spec-cohort-cycle-only-through-self",
        "generators/model/checks/semantics.py",
        "                if parent in seen:",
        "                if parent == cohort['name']:",
        "a cohort whose ancestors loop is refused (not an endless check)",
    ),
    Mutation(
        "spec-usage-cap-smallest-share",
        "generators/model/checks/semantics.py",
        "pool, share = max(partial.items(), key=lambda item: (item[1], item[0]))",
        "pool, share = min(partial.items(), key=lambda item: (item[1], item[0]))",
        "maxUsagePercent below the team's LARGEST partial share is refused",
    ),
    # sync-inventory's in-place edit of the environment file
    Mutation(
        "sync-edit-mode-lost",
        "generators/inventory/edit.py",
        "        os.chmod(tmp, mode)\n",
        "",
        "the edited environment file keeps its permissions",
    ),
    Mutation(
        "sync-edit-splice-front-to-back",
        "generators/inventory/edit.py",
        "for start, end, count in sorted(spans, reverse=True):",
        "for start, end, count in sorted(spans):",
        "several counts of different widths are replaced in one edit",
    ),
    Mutation(
        "sync-edit-proof-off",
        "generators/inventory/edit.py",
        "    if meant != expected:",
        "    if False:",
        "an edit that would change more than the counts is refused",
    ),
    Mutation(
        "sync-validates-the-original",
        "generators/inventory/sync.py",
        '(copy / ENV_DIR / planned.path.name).write_text(planned.edited, encoding="utf-8")',
        '(copy / ENV_DIR / planned.path.name).write_text(planned.original, encoding="utf-8")',
        "an edited environment that no longer validates is refused, nothing written",
    ),
    # the DCGM counters generator's quoting guard
    Mutation(
        "dcgm-guard-quote-allowed",
        "generators/components/monitoring/dcgm_counters.py",
        'FORBIDDEN = (",", \'"\', "\\n", "\\r")',
        'FORBIDDEN = (",", "\\n", "\\r")',
        "a help text with a double quote (Go's csv: bare quote) is refused",
    ),
    Mutation(
        "dcgm-guard-line-break-allowed",
        "generators/components/monitoring/dcgm_counters.py",
        'FORBIDDEN = (",", \'"\', "\\n", "\\r")',
        'FORBIDDEN = (",", \'"\')',
        "a help text with a line break (a record end) is refused",
    ),
    Mutation(
        "dcgm-guard-blanks-allowed",
        "generators/components/monitoring/dcgm_counters.py",
        "if bad or text != text.strip() or not text:",
        "if bad or not text:",
        "a field or help text with surrounding blanks (trimmed by the reader) is refused",
    ),
    Mutation(
        "dcgm-guard-field-unchecked",
        "generators/components/monitoring/dcgm_counters.py",
        'for part, text in (("field", field), ("help text", help_text)):',
        'for part, text in (("help text", help_text),):',
        "a field name with a comma or quote is refused too",
    ),
    # the gate's free-GPU query on an over-committed node
    Mutation(
        "gate-query-overcommit-negative",
        "generators/model/overflow.py",
        'free = f"clamp_min({capacity} - on (node) ({used} or on (node) {capacity} * 0), 0)"',
        'free = f"({capacity} - on (node) ({used} or on (node) {capacity} * 0))"',
        "an over-committed node (requests above allocatable) adds 0 free GPUs, not a negative number",
    ),
    Mutation(
        "gate-query-requests-summed-across-replicas",
        "generators/model/overflow.py",
        'f"sum by (node) (max by (namespace, pod, container, node, resource) ({requests})"',
        'f"sum by (node) (sum by (namespace, pod, container, node, resource) ({requests})"',
        "two kube-state-metrics replicas count a pod's GPU request once",
    ),
    # health conditions a spec turns off
    Mutation(
        "health-disabled-condition-quarantines",
        "generators/model/health.py",
        "        return tuple(c for c in self.conditions if c.enabled)",
        "        return tuple(c for c in self.conditions)",
        "a condition the spec disables quarantines nothing (not in the NodeHealthPolicy)",
    ),
    Mutation(
        "health-disabled-alert-says-quarantines",
        "generators/components/monitoring/alerts/health.py",
        "                if cond.enabled\n",
        "                if True\n",
        "the alert of a disabled condition says nobody quarantines the node",
    ),
    Mutation(
        "health-not-released-counts-disabled",
        "generators/components/monitoring/alerts/health.py",
        'bad = " or ".join(f"({c.query})" for c in q.quarantine.active_conditions)',
        'bad = " or ".join(f"({c.query})" for c in q.quarantine.conditions)',
        "GpuHealthNotReleased fires for a node bad only by a disabled condition",
    ),
)
