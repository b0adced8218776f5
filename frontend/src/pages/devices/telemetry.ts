// Telemetry rows -> chart series. `requests`, `errors` and `detections` are cumulative since the
// agent started, so the charts plot the difference between consecutive samples (detections as a
// rate: the difference over the seconds between them); a counter that goes down means the agent
// restarted, and the new value is what it counted since then.
import { metricsOf, type Telemetry } from "../../api/queries/fleet";

/** [time in ms, value]; null draws a gap. */
export type Point = [number, number | null];

export interface TelemetrySeries {
  requests: Point[];
  /** requests per second between heartbeats */
  requestsPerSecond: Point[];
  errors: Point[];
  p50: Point[];
  p95: Point[];
  p99: Point[];
  cpu: Point[];
  memoryMb: Point[];
  /** objects detected per second between heartbeats (detection models) */
  detectionsPerSecond: Point[];
  /** whether any row counts detections: a detection model served in the window */
  hasDetections: boolean;
}

const num = (value: unknown): number | null => (typeof value === "number" && Number.isFinite(value) ? value : null);

/** Per-interval increments of a cumulative counter; the first sample has no interval (null). */
export function counterDeltas(values: readonly (number | null)[]): (number | null)[] {
  let previous: number | null = null;
  return values.map((value) => {
    if (value === null) return null; // unknown: no point, and the next one compares with the last known
    const delta: number | null = previous === null ? null : value >= previous ? value - previous : value;
    previous = value;
    return delta;
  });
}

/**
 * Per-second rates of a cumulative counter sampled at `times` (ms): the increment since the last
 * known value (counterDeltas' restart rule) over the seconds since that value's sample; null for
 * the first known value, an unknown one, or no time between the two.
 */
export function counterRates(values: readonly (number | null)[], times: readonly number[]): (number | null)[] {
  const deltas = counterDeltas(values);
  let previousTime: number | null = null;
  return values.map((value, i) => {
    if (value === null) return null;
    const delta = deltas[i] ?? null;
    const time = times[i] ?? 0;
    const seconds = previousTime === null ? 0 : (time - previousTime) / 1000;
    previousTime = time;
    return delta === null || seconds <= 0 ? null : Math.round((delta / seconds) * 1000) / 1000;
  });
}

export function telemetrySeries(rows: readonly Telemetry[]): TelemetrySeries {
  const times = rows.map((row) => new Date(row.received_at).getTime());
  const metrics = rows.map((row) => metricsOf(row.metrics));
  const zip = (values: (number | null)[]): Point[] => values.map((value, i) => [times[i] ?? 0, value]);
  const latency = (key: "p50" | "p95" | "p99") => zip(metrics.map((m) => num(m.latency_ms?.[key])));
  const memory = metrics.map((m) => num(m.memory_bytes));
  const detections = metrics.map((m) => num(m.detections));
  return {
    requests: zip(counterDeltas(metrics.map((m) => num(m.requests)))),
    requestsPerSecond: zip(counterRates(metrics.map((m) => num(m.requests)), times)),
    errors: zip(counterDeltas(metrics.map((m) => num(m.errors)))),
    p50: latency("p50"),
    p95: latency("p95"),
    p99: latency("p99"),
    cpu: zip(metrics.map((m) => num(m.cpu_percent))),
    memoryMb: zip(memory.map((bytes) => (bytes === null ? null : Math.round((bytes / 1024 / 1024) * 10) / 10))),
    detectionsPerSecond: zip(counterRates(detections, times)),
    hasDetections: detections.some((value) => value !== null),
  };
}

/** The newest known value of a series (null when none). */
export function lastValue(points: readonly Point[]): number | null {
  for (let i = points.length - 1; i >= 0; i -= 1) {
    const value = points[i]?.[1];
    if (value !== null && value !== undefined) return value;
  }
  return null;
}

export type RelativeTimeKey = "time.justNow" | "time.secondsAgo" | "time.minutesAgo" | "time.hoursAgo" | "time.daysAgo";

/** "how long ago" as an i18n key and count. */
export function relativeTime(iso: string, now: number = Date.now()): { key: RelativeTimeKey; count: number } {
  const seconds = Math.max(0, Math.floor((now - new Date(iso).getTime()) / 1000));
  if (seconds < 5) return { key: "time.justNow", count: 0 };
  if (seconds < 60) return { key: "time.secondsAgo", count: seconds };
  if (seconds < 3600) return { key: "time.minutesAgo", count: Math.floor(seconds / 60) };
  if (seconds < 86400) return { key: "time.hoursAgo", count: Math.floor(seconds / 3600) };
  return { key: "time.daysAgo", count: Math.floor(seconds / 86400) };
}
