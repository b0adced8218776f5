// The console's routes. Django answers every non-API path with index.html (sampan/console.py),
// so these paths work on reload and as links.
import { Navigate, type RouteObject } from "react-router";

import { AppLayout } from "./components/AppLayout";
import { RequireAuth } from "./components/RequireAuth";
import { DatasetListPage } from "./pages/datasets/DatasetListPage";
import { DatasetPage } from "./pages/datasets/DatasetPage";
import { DatasetVersionPage } from "./pages/datasets/DatasetVersionPage";
import { DevicePage } from "./pages/devices/DevicePage";
import { DevicesPage } from "./pages/devices/DevicesPage";
import { LoginPage } from "./pages/LoginPage";
import { MembersPage } from "./pages/MembersPage";
import { ModelsPage } from "./pages/models/ModelsPage";
import { ModelVersionPage } from "./pages/models/ModelVersionPage";
import { NotFoundPage } from "./pages/NotFoundPage";
import { ProjectsPage } from "./pages/ProjectsPage";
import { ReportPage } from "./pages/reports/ReportPage";
import { TrainingJobPage } from "./pages/training/TrainingJobPage";
import { TrainingPage } from "./pages/training/TrainingPage";

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
          { path: "datasets/:datasetId/versions/:versionId", element: <DatasetVersionPage /> },
          { path: "members", element: <MembersPage /> },
          { path: "training", element: <TrainingPage /> },
          { path: "training/:jobId", element: <TrainingJobPage /> },
          { path: "training/:jobId/report", element: <ReportPage /> },
          { path: "models", element: <ModelsPage /> },
          { path: "models/versions/:versionId", element: <ModelVersionPage /> },
          { path: "devices", element: <DevicesPage /> },
          { path: "devices/:deviceId", element: <DevicePage /> },
        ],
      },
      { path: "*", element: <NotFoundPage /> },
    ],
  },
];
