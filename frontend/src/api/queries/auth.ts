import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";

import { api, type Schemas } from "../client";
import { unwrap } from "../errors";

export type User = Schemas["User"];
export const meKey = ["auth", "me"] as const;

/** The signed-in user; the query fails with an ApiError (401/403) when nobody is signed in. */
export function useMe() {
  return useQuery({
    queryKey: meKey,
    queryFn: async () => unwrap(await api().GET("/api/v1/auth/me/")),
    retry: false,
    staleTime: 5 * 60_000,
  });
}

export function useLogin() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (body: Schemas["LoginInputRequest"]) => {
      // the first visit has no csrftoken cookie yet; login itself is exempt, later writes are not
      unwrap(await api().GET("/api/v1/auth/csrf/"));
      return unwrap(await api().POST("/api/v1/auth/login/", { body }));
    },
    onSuccess: (user) => {
      queryClient.clear();
      queryClient.setQueryData(meKey, user);
    },
  });
}

export function useLogout() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async () => unwrap(await api().POST("/api/v1/auth/logout/")),
    onSuccess: () => queryClient.clear(),
  });
}
