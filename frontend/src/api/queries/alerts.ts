// Alert rules and alert history of a project (platform/sampan/fleet/alerts.py).
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";

import { api, type Schemas } from "../client";
import { unwrap } from "../errors";

export type AlertRule = Schemas["AlertRuleOutput"];
export type AlertRuleInput = Schemas["AlertRuleInputRequest"];
export type FiredAlert = Schemas["AlertOutput"];
export const ALERT_KINDS = ["device_offline", "error_rate", "p95_latency_ms", "low_confidence"] as const;

const keys = {
  rules: (projectId: string) => ["projects", projectId, "alert-rules"] as const,
  alerts: (projectId: string) => ["projects", projectId, "alerts"] as const,
};

export function useAlertRules(projectId: string) {
  return useQuery({
    queryKey: keys.rules(projectId),
    queryFn: async () => unwrap(await api().GET("/api/v1/projects/{project_id}/alert-rules/", { params: { path: { project_id: projectId } } })),
  });
}

/** The newest alerts first, refreshed every 30 s (rules are evaluated every minute). */
export function useAlerts(projectId: string) {
  return useQuery({
    queryKey: keys.alerts(projectId),
    queryFn: async () => unwrap(await api().GET("/api/v1/projects/{project_id}/alerts/", { params: { path: { project_id: projectId } } })),
    refetchInterval: 30_000,
  });
}

export function useCreateAlertRule(projectId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (body: AlertRuleInput) =>
      unwrap(await api().POST("/api/v1/projects/{project_id}/alert-rules/", { params: { path: { project_id: projectId } }, body })),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: keys.rules(projectId) }),
  });
}

export function useDeleteAlertRule(projectId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (ruleId: string) =>
      unwrap(
        await api().DELETE("/api/v1/projects/{project_id}/alert-rules/{rule_id}/", { params: { path: { project_id: projectId, rule_id: ruleId } } }),
      ),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: keys.rules(projectId) });
      void queryClient.invalidateQueries({ queryKey: keys.alerts(projectId) });
    },
  });
}
