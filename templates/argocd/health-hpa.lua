-- An HPA annotated
--   $annotation: "true"
-- scales what another Application owns (trainyard's HPAs, the inference Deployments): it is
-- Healthy, its conditions the message, so no sync waits or fails on it. Every other HPA:
-- Argo CD v3.5.1's built-in check, restated (gitops-engine/pkg/health/health_hpa.go:86-135).
local conditions = {}
if obj.status ~= nil and obj.status.conditions ~= nil then
  conditions = obj.status.conditions
end
local annotations = obj.metadata.annotations
if annotations ~= nil and annotations["$annotation"] == "true" then
  local parts = {}
  for _, c in ipairs(conditions) do
    table.insert(parts, (c.type or "") .. "=" .. (c.status or "") .. " " .. (c.reason or "") .. ": " .. (c.message or ""))
  end
  return {status = "Healthy", message = table.concat(parts, "; ")}
end
local degraded = {
  AbleToScale = {FailedGetScale = true, FailedUpdateScale = true},
  ScalingActive = {
    FailedGetResourceMetric = true, FailedGetObjectMetric = true, FailedGetPodsMetric = true,
    FailedGetExternalMetric = true, FailedComputeMetricsReplicas = true, InvalidSelector = true,
  },
}
for _, c in ipairs(conditions) do
  if degraded[c.type] ~= nil and degraded[c.type][c.reason] then
    return {status = "Degraded", message = c.message or ""}
  end
end
for _, c in ipairs(conditions) do
  if (c.type == "AbleToScale" or c.type == "ScalingLimited") and c.status == "True" then
    return {status = "Healthy", message = c.message or ""}
  end
end
return {status = "Progressing", message = "Waiting to Autoscale"}
