import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import { json, renderRoutes } from "../../test/render";
import { ModelVersionPage } from "./ModelVersionPage";
import { OfflineBundleButton, offlineSlug, offlineTarCommand } from "./OfflineBundle";

const version = {
  id: "mv1", model_id: "m1", model_name: "digits", version: 3, task_type: "image_classification", labels: ["0", "1"],
  metrics: { val_accuracy: 0.9, macro_f1: 0.8 }, pretrained: true, dataset_version_id: "dv1",
  dataset_version: { id: "dv1", dataset_id: "ds1", dataset_name: "digits", number: 3 }, training_job_id: null, parent_id: null,
  model_sha256: "abc", model_size: 2048, files: {}, manifest: {}, created_at: "2026-11-29T00:00:00Z",
};
const houses = [
  { target: "linux-x86_64", python: "3.11", wheels: 23, bytes: 89_456_640, built_at: "2026-11-29T00:00:00Z" },
  { target: "linux-aarch64", python: "3.12", wheels: 12, bytes: 41_943_040, built_at: "2026-11-29T00:00:00Z" },
];

/** The API: the version, the wheelhouses; every path asked for is kept. */
function api(wheelhouses: unknown[], asked: string[] = []) {
  return async (request: Request) => {
    const url = new URL(request.url);
    asked.push(url.pathname);
    if (url.pathname.endsWith("/agent-wheelhouses/")) return json(200, wheelhouses);
    if (url.pathname.endsWith("/model-versions/mv1/")) return json(200, version);
    if (url.pathname.endsWith("/devices/") || url.pathname.endsWith("/deployments/")) return json(200, []);
    return json(404, { error: { code: "not_found", message: url.pathname } });
  };
}

function renderButton(modelName: string, fetcher: ReturnType<typeof api>) {
  const routes = [{ path: "/", element: <OfflineBundleButton projectId="p1" version={{ ...version, model_name: modelName } as never} /> }];
  return renderRoutes(routes, "/", fetcher as unknown as typeof globalThis.fetch);
}

async function openDialog(): Promise<HTMLElement> {
  await userEvent.click(await screen.findByRole("button", { name: /Offline bundle/ }));
  // by its title, not getByRole("dialog", { name }): under test antd gives every modal's title the
  // same id, so a closed modal elsewhere on the page would name this one
  const title = await screen.findByText("Install on a device without network");
  const dialog = title.closest<HTMLElement>("[role=dialog]");
  if (!dialog) throw new Error("the title is not in a dialog");
  return dialog;
}

describe("offline bundle names", () => {
  it("slugs the model name as the server does", () => {
    expect(offlineSlug("digits")).toBe("digits");
    expect(offlineSlug("猫狗 detector v2")).toBe("detector_v2");
    expect(offlineSlug("猫狗识别")).toBe("model");
    expect(offlineSlug("._my model.")).toBe("my_model");
    expect(offlineSlug("a//b..c")).toBe("a_b..c");
  });

  it("names the downloaded tar only when the model's name is its own slug", () => {
    expect(offlineTarCommand("digits", 3, "linux-x86_64", "3.11")).toBe("tar xf digits-v3-offline-linux-x86_64-py3.11.tar");
    expect(offlineTarCommand("my model", 3, "linux-x86_64", "3.11")).toBe("tar xf *-v3-offline-linux-x86_64-py3.11.tar");
  });
});

describe("OfflineBundle", () => {
  it("lists the targets beside Download and links the chosen target's bundle", async () => {
    const asked: string[] = [];
    const routes = [{ path: "/projects/:projectId/models/versions/:versionId", element: <ModelVersionPage /> }];
    renderRoutes(routes, "/projects/p1/models/versions/mv1", api(houses, asked) as unknown as typeof globalThis.fetch);
    expect(await screen.findByRole("link", { name: /Download package/ })).toBeInTheDocument();
    expect(asked.filter((path) => path.endsWith("/agent-wheelhouses/"))).toEqual([]); // only once the dialog opens
    const dialog = await openDialog();
    expect(await within(dialog).findByText("Linux x86_64 · Python 3.11 (23 wheels, 85.3 MB)")).toBeInTheDocument();
    const download = within(dialog).getByRole("link", { name: /Download the bundle/ });
    expect(download).toHaveAttribute("href", "/api/v1/projects/p1/model-versions/mv1/offline-bundle/?target=linux-x86_64&python=3.11");
    expect(within(dialog).getByTestId("offline-tar")).toHaveTextContent("tar xf digits-v3-offline-linux-x86_64-py3.11.tar");

    await userEvent.click(within(dialog).getByRole("combobox", { name: "Device platform and Python" }));
    await userEvent.click(await screen.findByTitle("Linux aarch64 · Python 3.12 (12 wheels, 40.0 MB)"));
    expect(within(dialog).getByRole("link", { name: /Download the bundle/ })).toHaveAttribute(
      "href",
      "/api/v1/projects/p1/model-versions/mv1/offline-bundle/?target=linux-aarch64&python=3.12",
    );
    expect(within(dialog).getByTestId("offline-tar")).toHaveTextContent("tar xf digits-v3-offline-linux-aarch64-py3.12.tar");
    expect(within(dialog).getByTestId("offline-install")).toHaveTextContent("sh digits-v3-offline-linux-aarch64-py3.12/install.sh");
    expect(within(dialog).getByTestId("offline-install-python")).toHaveTextContent(
      "PYTHON=python3.12 sh digits-v3-offline-linux-aarch64-py3.12/install.sh",
    );
    expect(within(dialog).getByTestId("offline-run")).toHaveTextContent("~/.local/share/sampan-agent/bin/sampan-agent run --host 0.0.0.0 --port 8700 --api-key-file ~/agent.key");
    // the tar is the browser's download, never fetched by the console
    expect(asked.filter((path) => path.includes("offline-bundle"))).toEqual([]);
  }, 30_000); // antd's modal and select are slow in jsdom

  it("without any prepared target shows the administrator's command and no download", async () => {
    renderButton("digits", api([]));
    const dialog = await openDialog();
    expect(await within(dialog).findByText("No device targets are prepared on this server yet.")).toBeInTheDocument();
    expect(within(dialog).getByTestId("offline-admin-command")).toHaveTextContent(
      "python platform/manage.py sampan_wheelhouse --target linux-x86_64 --python 3.11",
    );
    expect(within(dialog).queryByRole("link", { name: /Download/ })).toBeNull();
    expect(within(dialog).queryByTestId("offline-install")).toBeNull();
  }, 30_000);

  it("a non-ASCII model name installs from the slug folder, and the tar is matched by a pattern", async () => {
    renderButton("猫狗 detector", api(houses));
    const dialog = await openDialog();
    expect(await within(dialog).findByTestId("offline-install")).toHaveTextContent("sh detector-v3-offline-linux-x86_64-py3.11/install.sh");
    expect(within(dialog).getByTestId("offline-tar")).toHaveTextContent("tar xf *-v3-offline-linux-x86_64-py3.11.tar");
    expect(within(dialog).getByText(/猫狗 detector v3/)).toBeInTheDocument(); // the intro names the model as it is
  }, 30_000);

  it("shows the server's error in place of the targets", async () => {
    const failing = async () => json(500, { error: { code: "server_error", message: "wheelhouse folder unreadable" } });
    renderButton("digits", failing as unknown as ReturnType<typeof api>);
    const dialog = await openDialog();
    expect(await within(dialog).findByText("wheelhouse folder unreadable")).toBeInTheDocument();
    expect(within(dialog).queryByRole("link", { name: /Download/ })).toBeNull();
  }, 30_000);
});
