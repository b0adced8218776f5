// The signed-in user's API tokens and own activity, user accounts made by staff, and a project's audit log.
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";

import { api, type Schemas } from "../client";
import { unwrap } from "../errors";
import { projectKeys } from "./projects";

export type ApiTokenRow = Schemas["TokenListOutput"];
export type IssuedToken = Schemas["TokenOutput"];
export type CreatedUser = Schemas["UserCreateOutput"];
export type AuditEvent = Schemas["AuditEventOutput"];

export const accountKeys = {
  tokens: ["auth", "tokens"] as const,
  myAudit: ["auth", "me", "audit"] as const,
  audit: (projectId: string) => ["projects", projectId, "audit"] as const,
};

/** The caller's live (not revoked) tokens, newest first, with their last use. */
export function useTokens() {
  return useQuery({
    queryKey: accountKeys.tokens,
    queryFn: async () => unwrap(await api().GET("/api/v1/auth/tokens/")),
  });
}

/** Creates a token; the answer carries its secret, which is never shown again. */
export function useCreateToken() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (body: Schemas["TokenInputRequest"]) => unwrap(await api().POST("/api/v1/auth/tokens/", { body })),
    onSuccess: () =>
      Promise.all([queryClient.invalidateQueries({ queryKey: accountKeys.tokens }), queryClient.invalidateQueries({ queryKey: accountKeys.myAudit })]),
  });
}

export function useRevokeToken() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (tokenId: string) =>
      unwrap(await api().DELETE("/api/v1/auth/tokens/{token_id}/", { params: { path: { token_id: tokenId } } })),
    onSuccess: () =>
      Promise.all([queryClient.invalidateQueries({ queryKey: accountKeys.tokens }), queryClient.invalidateQueries({ queryKey: accountKeys.myAudit })]),
  });
}

/** Staff, or an owner into their project (`project_id`, `role`): creates a user; without a
 * password the answer carries a one-time password. */
export function useCreateUser() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (body: Schemas["UserCreateInputRequest"]) => unwrap(await api().POST("/api/v1/users/", { body })),
    onSuccess: (_user, body) =>
      body.project_id ? queryClient.invalidateQueries({ queryKey: projectKeys.members(body.project_id) }) : undefined,
  });
}

/** One page of a project's audit log (owners only), newest first; `action` filters ("member." = every member.* action). */
export function useAuditLog(projectId: string, page: number, pageSize: number, action?: string) {
  return useQuery({
    queryKey: [...accountKeys.audit(projectId), page, pageSize, action ?? ""],
    queryFn: async () =>
      unwrap(
        await api().GET("/api/v1/projects/{project_id}/audit/", {
          params: { path: { project_id: projectId }, query: { page, page_size: pageSize, ...(action ? { action } : {}) } },
        }),
      ),
    placeholderData: keepPreviousData,
  });
}

/** One page of the caller's own events of no project (tokens created and revoked, sign-ins and
 * failed tries, the account created), newest first. */
export function useMyActivity(page: number, pageSize: number) {
  return useQuery({
    queryKey: [...accountKeys.myAudit, page, pageSize],
    queryFn: async () => unwrap(await api().GET("/api/v1/auth/me/audit/", { params: { query: { page, page_size: pageSize } } })),
    placeholderData: keepPreviousData,
  });
}
