-- A grafana-operator object annotated
--   $annotation: "true"
-- is Healthy, the operator's conditions (if any) the message, so no sync waits on a
-- dashboard no grafana-operator reconciles. Every other one: Argo CD v3.5.1's built-in
-- check, restated (resource_customizations/grafana.integreatly.org/GrafanaDashboard/health.lua,
-- the same for GrafanaFolder).
local hs = {status = "Progressing", message = ""}
if obj.status ~= nil and obj.status.conditions ~= nil then
  for _, condition in ipairs(obj.status.conditions) do
    if condition.status ~= nil then
      if hs.message ~= "" then
        hs.message = hs.message .. ", "
      end
      if condition.reason ~= nil then
        hs.message = hs.message .. condition.reason
        if condition.type ~= nil then
          hs.message = hs.message .. " for " .. condition.type
          if condition.message ~= nil then
            hs.message = hs.message .. " because " .. condition.message
          end
        end
      end
      if condition.status == "False" then
        hs.status = "Degraded"
        break
      end
      if condition.status == "True" then
        hs.status = "Healthy"
      end
    end
  end
end
local annotations = obj.metadata.annotations
if annotations ~= nil and annotations["$annotation"] == "true" then
  hs.status = "Healthy"
end
return hs
