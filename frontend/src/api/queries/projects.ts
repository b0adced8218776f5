import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";

import { api, type Schemas } from "../client";
import { unwrap } from "../errors";

export type Project = Schemas["Project"];
export type Membership = Schemas["Membership"];
export type Role = Schemas["RoleEnum"];
export const ROLES: readonly Role[] = ["viewer", "editor", "owner"];

export const projectKeys = {
  all: ["projects"] as const,
  detail: (projectId: string) => ["projects", projectId] as const,
  members: (projectId: string) => ["projects", projectId, "members"] as const,
};

export function useProjects() {
  return useQuery({
    queryKey: projectKeys.all,
    queryFn: async () => unwrap(await api().GET("/api/v1/projects/")),
  });
}

/** The archived projects only (the projects list's "Show archived" toggle). */
export function useArchivedProjects(enabled: boolean) {
  return useQuery({
    queryKey: [...projectKeys.all, "archived"] as const,
    enabled,
    queryFn: async () => unwrap(await api().GET("/api/v1/projects/", { params: { query: { archived: "true" } } })),
  });
}

/** Rename, describe, archive or unarchive a project (owners). */
export function useUpdateProject(projectId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (body: Schemas["PatchedProjectUpdateInputRequest"]) =>
      unwrap(
        await api().PATCH("/api/v1/projects/{project_id}/", { params: { path: { project_id: projectId } }, body }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: projectKeys.all }),
  });
}

/** Delete a project (owners); refused with 409 delete_blocked while its models or jobs run. */
export function useDeleteProject(projectId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async () =>
      unwrap(await api().DELETE("/api/v1/projects/{project_id}/", { params: { path: { project_id: projectId } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: projectKeys.all }),
  });
}

export function useProject(projectId: string) {
  return useQuery({
    queryKey: projectKeys.detail(projectId),
    queryFn: async () =>
      unwrap(await api().GET("/api/v1/projects/{project_id}/", { params: { path: { project_id: projectId } } })),
  });
}

export function useCreateProject() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (body: Schemas["ProjectInputRequest"]) =>
      unwrap(await api().POST("/api/v1/projects/", { body })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: projectKeys.all }),
  });
}

export function useMembers(projectId: string) {
  return useQuery({
    queryKey: projectKeys.members(projectId),
    queryFn: async () =>
      unwrap(
        await api().GET("/api/v1/projects/{project_id}/members/", { params: { path: { project_id: projectId } } }),
      ),
  });
}

/** Invites a user or changes a member's role (the API sets the role of `username`). */
export function useSetMember(projectId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (body: Schemas["MembershipInputRequest"]) =>
      unwrap(
        await api().POST("/api/v1/projects/{project_id}/members/", {
          params: { path: { project_id: projectId } },
          body,
        }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: projectKeys.members(projectId) }),
  });
}

export function useRemoveMember(projectId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (membershipId: string) =>
      unwrap(
        await api().DELETE("/api/v1/projects/{project_id}/members/{membership_id}/", {
          params: { path: { project_id: projectId, membership_id: membershipId } },
        }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: projectKeys.members(projectId) }),
  });
}

/** The signed-in user's role in the project, from the projects list the layout already loads;
 * undefined while it loads or when the project is not in the list. */
export function useProjectRole(projectId: string): Role | undefined {
  // the project itself says the role: the default project list leaves archived projects out
  const project = useProject(projectId);
  const projects = useProjects();
  return project.data?.role ?? projects.data?.find((p) => p.id === projectId)?.role;
}

/** False only for a viewer: write controls are disabled (or hidden) for them. While the role is
 * unknown the controls stay enabled; the server still refuses a viewer's writes with 403. */
export function useCanEdit(projectId: string): boolean {
  return useProjectRole(projectId) !== "viewer";
}
