// The console's routes. Django answers every non-API path with index.html (sampan/console.py),
// so these paths work on reload and as links.
import { Navigate, type RouteObject } from "react-router";

import { AppLayout } from "./components/AppLayout";
import { RequireAuth } from "./components/RequireAuth";
import { ComingSoonPage } from "./pages/ComingSoonPage";
import { DatasetListPage } from "./pages/datasets/DatasetListPage";
import { DatasetPage } from "./pages/datasets/DatasetPage";
import { LoginPage } from "./pages/LoginPage";
import { MembersPage } from "./pages/MembersPage";
import { NotFoundPage } from "./pages/NotFoundPage";
import { ProjectsPage } from "./pages/ProjectsPage";

export const routes: RouteObject[] = [
  { path: "/login", element: <LoginPage /> },
  {
    element: (
      <RequireAuth>
        <AppLayout />
      </RequireAuth>
    ),
    children: [
      { index: true, element: <Navigate to="/projects" replace /> },
      { path: "projects", element: <ProjectsPage /> },
      {
        path: "projects/:projectId",
        children: [
          { index: true, element: <Navigate to="datasets" replace /> },
          { path: "datasets", element: <DatasetListPage /> },
          { path: "datasets/:datasetId", element: <DatasetPage /> },
          { path: "members", element: <MembersPage /> },
          { path: "training", element: <ComingSoonPage section="training" /> },
          { path: "models", element: <ComingSoonPage section="models" /> },
          { path: "devices", element: <ComingSoonPage section="devices" /> },
        ],
      },
      { path: "*", element: <NotFoundPage /> },
    ],
  },
];
