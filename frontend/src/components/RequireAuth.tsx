import { Spin } from "antd";
import type { ReactNode } from "react";
import { Navigate, useLocation } from "react-router";

import { isApiError } from "../api/errors";
import { useMe } from "../api/queries/auth";
import { ErrorAlert } from "./errors";

/** Renders its children for a signed-in user; sends anyone else to the sign-in page. */
export function RequireAuth({ children }: { children: ReactNode }) {
  const me = useMe();
  const location = useLocation();
  if (me.isPending) return <Spin fullscreen />;
  if (me.isError) {
    if (isApiError(me.error) && (me.error.status === 401 || me.error.status === 403)) {
      const next = location.pathname + location.search;
      return <Navigate to={`/login?next=${encodeURIComponent(next)}`} replace />;
    }
    return <ErrorAlert error={me.error} onRetry={() => void me.refetch()} />;
  }
  return <>{children}</>;
}
