import { describe, expect, it } from "vitest";

import { deploymentsInFlight } from "../../api/queries/fleet";
import { counterDeltas, counterRates, lastValue, relativeTime, telemetrySeries } from "./telemetry";

const row = (t: string, metrics: unknown) => ({ received_at: t, device_time: null, current_model_version_id: null, metrics });

describe("counterDeltas", () => {
  it("turns a cumulative counter into per-interval increments", () => {
    expect(counterDeltas([10, 15, 15, 30])).toEqual([null, 5, 0, 15]);
  });
  it("treats a drop as an agent restart: the new value counts since then", () => {
    expect(counterDeltas([100, 120, 3, 9])).toEqual([null, 20, 3, 6]);
  });
  it("skips unknown values and compares with the last known one", () => {
    expect(counterDeltas([null, 4, null, 10])).toEqual([null, null, null, 6]);
  });
});

describe("telemetrySeries", () => {
  it("builds every chart's points from the rows", () => {
    const rows = [
      row("2026-11-29T12:00:00Z", { requests: 2, errors: 0, latency_ms: { p50: 3, p95: 8, p99: 9 }, cpu_percent: 12.5, memory_bytes: 104857600 }),
      row("2026-11-29T12:00:10Z", { requests: 7, errors: 1, latency_ms: { p50: 4, p95: 9, p99: 11 }, cpu_percent: 20, memory_bytes: 110100480 }),
      row("2026-11-29T12:00:20Z", {}),
    ];
    const t0 = Date.parse("2026-11-29T12:00:00Z");
    const s = telemetrySeries(rows);
    expect(s.requests).toEqual([[t0, null], [t0 + 10000, 5], [t0 + 20000, null]]);
    expect(s.errors.map((p) => p[1])).toEqual([null, 1, null]);
    expect(s.p95.map((p) => p[1])).toEqual([8, 9, null]);
    expect(s.cpu.map((p) => p[1])).toEqual([12.5, 20, null]);
    expect(s.memoryMb.map((p) => p[1])).toEqual([100, 105, null]);
  });
});

describe("detections per second", () => {
  const t0 = Date.parse("2026-12-01T12:00:00Z");
  it("divides each increment by the seconds since the last known count", () => {
    expect(counterRates([10, 40, 40, 100], [t0, t0 + 10000, t0 + 15000, t0 + 25000])).toEqual([null, 3, 0, 6]);
  });
  it("bridges an unknown count and restarts with the agent", () => {
    // the third sample is unknown: the fourth's 30 more came over 20 s; then the agent restarted
    expect(counterRates([5, 25, null, 55, 8], [t0, t0 + 5000, t0 + 10000, t0 + 25000, t0 + 29000])).toEqual([null, 4, null, 1.5, 2]);
  });
  it("charts only a detection model's rows, and the statistic is the newest rate", () => {
    const series = telemetrySeries([
      row("2026-12-01T12:00:00Z", { requests: 1, detections: 0 }),
      row("2026-12-01T12:00:05Z", { requests: 4, detections: 12 }),
      row("2026-12-01T12:00:10Z", { requests: 5 }),
    ]);
    expect(series.hasDetections).toBe(true);
    expect(series.detectionsPerSecond.map((p) => p[1])).toEqual([null, 2.4, null]);
    expect(lastValue(series.detectionsPerSecond)).toBe(2.4);
    expect(telemetrySeries([row("2026-12-01T12:00:00Z", { requests: 1 })]).hasDetections).toBe(false);
  });
});

describe("deploymentsInFlight", () => {
  it("polls while any deployment is pending, downloading or verifying", () => {
    expect(deploymentsInFlight([{ state: "running" }, { state: "downloading" }])).toBe(true);
    expect(deploymentsInFlight([{ state: "pending" }])).toBe(true);
    expect(deploymentsInFlight([{ state: "verifying" }])).toBe(true);
  });
  it("stops once every one is running, failed or superseded (or there are none)", () => {
    expect(deploymentsInFlight([{ state: "running" }, { state: "failed" }, { state: "superseded" }])).toBe(false);
    expect(deploymentsInFlight([])).toBe(false);
    expect(deploymentsInFlight(undefined)).toBe(false);
  });
});

describe("relativeTime", () => {
  const now = Date.parse("2026-11-29T12:00:00Z");
  it("says how long ago", () => {
    expect(relativeTime("2026-11-29T11:59:58Z", now)).toEqual({ key: "time.justNow", count: 0 });
    expect(relativeTime("2026-11-29T11:59:30Z", now)).toEqual({ key: "time.secondsAgo", count: 30 });
    expect(relativeTime("2026-11-29T11:55:00Z", now)).toEqual({ key: "time.minutesAgo", count: 5 });
    expect(relativeTime("2026-11-29T09:00:00Z", now)).toEqual({ key: "time.hoursAgo", count: 3 });
    expect(relativeTime("2026-11-27T12:00:00Z", now)).toEqual({ key: "time.daysAgo", count: 2 });
  });
});
