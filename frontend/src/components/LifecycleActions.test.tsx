import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";

import { ApiError } from "../api/errors";
import { renderWithProviders } from "../test/render";
import { DeleteConfirmDialog, LifecycleActions } from "./LifecycleActions";

function deleteButton() {
  return screen.getByRole("button", { name: /Delete/ });
}

describe("DeleteConfirmDialog", () => {
  it("enables Delete only once the exact name is typed, then confirms", async () => {
    const onConfirm = vi.fn().mockResolvedValue(undefined);
    renderWithProviders(<DeleteConfirmDialog open kind="dataset" name="Pets 2" onConfirm={onConfirm} onClose={() => {}} />);
    expect(screen.getByText("Delete dataset Pets 2?")).toBeInTheDocument();
    const input = screen.getByRole("textbox", { name: "Name to confirm" });
    expect(deleteButton()).toBeDisabled();
    await userEvent.type(input, "Pets");
    expect(deleteButton()).toBeDisabled();
    await userEvent.type(input, " 2");
    expect(deleteButton()).toBeEnabled();
    await userEvent.click(deleteButton());
    await waitFor(() => expect(onConfirm).toHaveBeenCalledTimes(1));
  });

  it("shows the server's refusal and stays open", async () => {
    const refusal = new ApiError(409, {
      code: "delete_blocked",
      message: "project 'Line' cannot be deleted yet: device 'cam-1' runs digits v1. First remove those devices.",
    });
    const onConfirm = vi.fn().mockRejectedValue(refusal);
    renderWithProviders(<DeleteConfirmDialog open kind="project" name="Line" onConfirm={onConfirm} onClose={() => {}} />);
    await userEvent.type(screen.getByRole("textbox", { name: "Name to confirm" }), "Line");
    await userEvent.click(deleteButton());
    const alert = await screen.findByRole("alert");
    expect(alert).toHaveTextContent("Not deleted");
    expect(alert).toHaveTextContent("device 'cam-1' runs digits v1. First remove those devices.");
    expect(screen.getByText("Delete project Line?")).toBeInTheDocument();
  });
});

describe("LifecycleActions", () => {
  it("archives an active one and unarchives an archived one", async () => {
    const update = vi.fn().mockResolvedValue(undefined);
    const props = { kind: "dataset" as const, name: "Pets", update, remove: vi.fn(), onDeleted: vi.fn() };
    const { unmount } = renderWithProviders(<LifecycleActions {...props} archived={false} canManage />);
    await userEvent.click(screen.getByRole("button", { name: /Archive/ }));
    await waitFor(() => expect(update).toHaveBeenCalledWith({ archived: true }));
    unmount();
    renderWithProviders(<LifecycleActions {...props} archived canManage />);
    await userEvent.click(screen.getByRole("button", { name: /Unarchive/ }));
    await waitFor(() => expect(update).toHaveBeenLastCalledWith({ archived: false }));
  });

  it("is hidden when the caller cannot manage it", () => {
    renderWithProviders(<LifecycleActions kind="project" name="P" archived={false} canManage={false}
      update={vi.fn()} remove={vi.fn()} onDeleted={vi.fn()} />);
    expect(screen.queryByRole("button", { name: /Delete/ })).toBeNull();
  });
});
