import { act, renderHook } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { jobSocketUrl, useJobSocket } from "./useJobSocket";

class FakeSocket {
  static all: FakeSocket[] = [];
  onopen: (() => void) | null = null;
  onmessage: ((event: { data: string }) => void) | null = null;
  onclose: (() => void) | null = null;
  closed = false;
  constructor(public url: string) {
    FakeSocket.all.push(this);
  }
  close() {
    this.closed = true;
  }
}

describe("useJobSocket", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    FakeSocket.all = [];
    vi.stubGlobal("WebSocket", FakeSocket);
  });
  afterEach(() => {
    vi.unstubAllGlobals();
    vi.useRealTimers();
  });

  it("builds ws and wss URLs", () => {
    expect(jobSocketUrl("training", "j1", { protocol: "https:", host: "h:1" } as Location)).toBe("wss://h:1/ws/jobs/training/j1/");
    expect(jobSocketUrl("import", "j2", { protocol: "http:", host: "h" } as Location)).toBe("ws://h/ws/jobs/import/j2/");
  });

  it("is live only while messages arrive, passes them on, and reconnects after a close", () => {
    const received: unknown[] = [];
    const { result, unmount } = renderHook(() => useJobSocket("ws://x/ws/jobs/training/j/", true, (m) => received.push(m)));
    const first = FakeSocket.all[0]!;
    act(() => first.onopen?.());
    expect(result.current).toBe(false); // open but nothing received yet
    act(() => first.onmessage?.({ data: JSON.stringify({ status: "RUNNING", progress: {}, error: "" }) }));
    expect(result.current).toBe(false); // the state sent on connect proves nothing about events
    act(() => first.onmessage?.({ data: JSON.stringify({ status: "RUNNING", progress: { epoch: 1 } }) }));
    expect(result.current).toBe(true);
    expect(received).toEqual([
      { status: "RUNNING", progress: {}, error: "" },
      { status: "RUNNING", progress: { epoch: 1 } },
    ]);
    act(() => vi.advanceTimersByTime(5000)); // silent for longer than FRESH_MS
    expect(result.current).toBe(false);
    act(() => first.onclose?.());
    act(() => vi.advanceTimersByTime(1000));
    expect(FakeSocket.all).toHaveLength(2);
    unmount();
    expect(FakeSocket.all[1]!.closed).toBe(true);
  });

  it("does not connect when disabled", () => {
    renderHook(() => useJobSocket("ws://x/", false, () => undefined));
    expect(FakeSocket.all).toHaveLength(0);
  });
});
