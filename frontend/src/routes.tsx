// The console's routes. Django answers every non-API path with index.html (sampan/console.py),
// so these paths work on reload and as links.
//
// Each page is its own chunk, loaded when its route is first visited (react-router's `lazy`):
// the first paint only needs the layout and the login page, and the heavy parts (charts, the
// annotation library) come with the pages that use them.
import { Skeleton } from "antd";
import { Navigate, type RouteObject } from "react-router";

import { AppLayout } from "./components/AppLayout";
import { RequireAuth } from "./components/RequireAuth";
import { LoginPage } from "./pages/LoginPage";
import { NotFoundPage } from "./pages/NotFoundPage";

/** A route's `lazy` for the page component exported as `name` from a module. */
function page<M extends Record<string, unknown>>(load: () => Promise<M>, name: keyof M & string): RouteObject["lazy"] {
  return async () => ({ Component: (await load())[name] as React.ComponentType });
}

export const routes: RouteObject[] = [
  { path: "/login", element: <LoginPage /> },
  {
    element: (
      <RequireAuth>
        <AppLayout />
      </RequireAuth>
    ),
    // shown while the first page's chunk loads (a reload on a deep link)
    hydrateFallbackElement: <Skeleton active style={{ padding: 24 }} />,
    children: [
      { index: true, element: <Navigate to="/projects" replace /> },
      { path: "projects", lazy: page(() => import("./pages/ProjectsPage"), "ProjectsPage") },
      { path: "tokens", lazy: page(() => import("./pages/TokensPage"), "TokensPage") },
      {
        path: "projects/:projectId",
        children: [
          { index: true, element: <Navigate to="datasets" replace /> },
          { path: "datasets", lazy: page(() => import("./pages/datasets/DatasetListPage"), "DatasetListPage") },
          { path: "datasets/:datasetId", lazy: page(() => import("./pages/datasets/DatasetPage"), "DatasetPage") },
          {
            path: "datasets/:datasetId/versions/:versionId",
            lazy: page(() => import("./pages/datasets/DatasetVersionPage"), "DatasetVersionPage"),
          },
          { path: "members", lazy: page(() => import("./pages/MembersPage"), "MembersPage") },
          { path: "audit", lazy: page(() => import("./pages/AuditPage"), "AuditPage") },
          { path: "training", lazy: page(() => import("./pages/training/TrainingPage"), "TrainingPage") },
          { path: "training/:jobId", lazy: page(() => import("./pages/training/TrainingJobPage"), "TrainingJobPage") },
          { path: "training/:jobId/report", lazy: page(() => import("./pages/reports/ReportPage"), "ReportPage") },
          { path: "models", lazy: page(() => import("./pages/models/ModelsPage"), "ModelsPage") },
          { path: "models/versions/:versionId", lazy: page(() => import("./pages/models/ModelVersionPage"), "ModelVersionPage") },
          {
            path: "compression-jobs/:jobId",
            lazy: page(() => import("./pages/compression/CompressionJobPage"), "CompressionJobPage"),
          },
          { path: "devices", lazy: page(() => import("./pages/devices/DevicesPage"), "DevicesPage") },
          { path: "devices/:deviceId", lazy: page(() => import("./pages/devices/DevicePage"), "DevicePage") },
          { path: "alerts", lazy: page(() => import("./pages/alerts/AlertsPage"), "AlertsPage") },
          { path: "rollouts", lazy: page(() => import("./pages/rollouts/RolloutsPage"), "RolloutsPage") },
          { path: "rollouts/:rolloutId", lazy: page(() => import("./pages/rollouts/RolloutPage"), "RolloutPage") },
        ],
      },
      { path: "*", element: <NotFoundPage /> },
    ],
  },
];
