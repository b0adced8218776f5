import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import { renderWithProviders } from "../../test/render";
import { ImportReportView } from "./ImportJobCard";

describe("ImportReportView", () => {
  it("counts each outcome and lists rejected files with their reasons", async () => {
    renderWithProviders(
      <ImportReportView
        imported={118}
        duplicates={[{ name: "0/a.png", reason: "same bytes as 0/b.png" }]}
        ignored={[{ name: "__MACOSX/._a.png", reason: "macOS metadata" }]}
        rejected={[{ name: "broken.png", reason: "truncated image" }]}
      />,
    );

    expect(screen.getByText("118")).toBeInTheDocument();
    // rejected files are open by default: they are what a person must act on
    const rejectedRow = screen.getByText("broken.png").closest("tr")!;
    expect(within(rejectedRow).getByText("truncated image")).toBeInTheDocument();
    expect(screen.queryByText("macOS metadata")).not.toBeInTheDocument();

    await userEvent.click(screen.getByText("Ignored (1)"));
    expect(await screen.findByText("macOS metadata")).toBeInTheDocument();
  });

  it("says so when nothing was skipped", () => {
    renderWithProviders(<ImportReportView imported={3} duplicates={[]} ignored={[]} rejected={[]} />);
    expect(screen.getByText("Every file was imported.")).toBeInTheDocument();
  });
});
