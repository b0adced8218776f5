// A viewer sees the console read-only: write controls disabled, with the reason; editors unchanged.
import { screen, waitFor } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import { DevicesPage } from "../pages/devices/DevicesPage";
import { TrainingPage } from "../pages/training/TrainingPage";
import { json, renderRoutes } from "../test/render";
import { AppLayout } from "./AppLayout";

type Role = "owner" | "editor" | "viewer";

const version = {
  id: "v2",
  dataset_id: "d1",
  number: 2,
  task_type: "image_classification",
  labels: ["cat", "dog"],
  seed: 0,
  split_fractions: { val: 0.2, test: 0 },
  digest: "sha256:x",
  flags: [],
  stats: { samples: 40, splits: { train: 32, val: 8 }, classes: {} },
  note: "",
  created_at: "2026-11-29T00:00:00Z",
};

function api(role: Role) {
  return async (request: Request) => {
    const path = new URL(request.url).pathname;
    if (path === "/api/v1/projects/")
      return json(200, [{ id: "p1", name: "Shelves", description: "", created_at: "2026-11-29T00:00:00Z", role }]);
    if (path === "/api/v1/auth/me/") return json(200, { id: 1, username: role, email: "" });
    if (path.endsWith("/training-jobs/")) return json(200, { count: 0, next: null, previous: null, results: [] });
    if (path.endsWith("/dataset-versions/v2/")) return json(200, version);
    if (path.endsWith("/datasets/d1/versions/")) return json(200, [version]);
    if (path.endsWith("/datasets/")) return json(200, [{ id: "d1", name: "pets", task_type: "image_classification" }]);
    if (path.endsWith("/devices/")) return json(200, []);
    return json(404, { error: { code: "not_found", message: path } });
  };
}

function renderAt(role: Role, path: string) {
  const routes = [
    {
      path: "/projects/:projectId",
      element: <AppLayout />,
      children: [
        { path: "training", element: <TrainingPage /> },
        { path: "devices", element: <DevicesPage /> },
      ],
    },
  ];
  return renderRoutes(routes, path, api(role) as unknown as typeof globalThis.fetch);
}

describe("read-only console for viewers", () => {
  it("a viewer cannot start training and the header says read-only", async () => {
    renderAt("viewer", "/projects/p1/training?version=v2");
    // the first render of the file loads the training page's modules: slow on a busy machine
    expect(await screen.findByText("v2 · 40 samples · 2 classes", {}, { timeout: 10_000 })).toBeInTheDocument();
    expect(await screen.findByText("Read-only: you are a viewer in this project")).toBeInTheDocument();
    await waitFor(() => expect(screen.getByRole("button", { name: /Start training/ })).toBeDisabled());
  });

  it("an editor can start training and sees no read-only banner", async () => {
    renderAt("editor", "/projects/p1/training?version=v2");
    expect(await screen.findByText("v2 · 40 samples · 2 classes")).toBeInTheDocument();
    expect(await screen.findByTitle("Shelves")).toBeInTheDocument();
    expect(screen.getByRole("button", { name: /Start training/ })).toBeEnabled();
    expect(screen.queryByTestId("read-only-tag")).not.toBeInTheDocument();
  });

  it("a viewer cannot add a device; an owner can", async () => {
    const viewer = renderAt("viewer", "/projects/p1/devices");
    expect(await screen.findByTestId("read-only-tag")).toBeInTheDocument();
    await waitFor(() => expect(screen.getByRole("button", { name: /Add device/ })).toBeDisabled());
    viewer.unmount();

    renderAt("owner", "/projects/p1/devices");
    expect(await screen.findByTitle("Shelves")).toBeInTheDocument();
    expect(screen.getByRole("button", { name: /Add device/ })).toBeEnabled();
  });
});
