// Telemetry rows -> chart series. `requests` and `errors` are cumulative since the agent started,
// so the charts plot the difference between consecutive samples; a counter that goes down means
// the agent restarted, and the new value is what it counted since then.
import { metricsOf, type Telemetry } from "../../api/queries/fleet";

/** [time in ms, value]; null draws a gap. */
export type Point = [number, number | null];

export interface TelemetrySeries {
  requests: Point[];
  errors: Point[];
  p50: Point[];
  p95: Point[];
  p99: Point[];
  cpu: Point[];
  memoryMb: Point[];
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

export function telemetrySeries(rows: readonly Telemetry[]): TelemetrySeries {
  const times = rows.map((row) => new Date(row.received_at).getTime());
  const metrics = rows.map((row) => metricsOf(row.metrics));
  const zip = (values: (number | null)[]): Point[] => values.map((value, i) => [times[i] ?? 0, value]);
  const latency = (key: "p50" | "p95" | "p99") => zip(metrics.map((m) => num(m.latency_ms?.[key])));
  const memory = metrics.map((m) => num(m.memory_bytes));
  return {
    requests: zip(counterDeltas(metrics.map((m) => num(m.requests)))),
    errors: zip(counterDeltas(metrics.map((m) => num(m.errors)))),
    p50: latency("p50"),
    p95: latency("p95"),
    p99: latency("p99"),
    cpu: zip(metrics.map((m) => num(m.cpu_percent))),
    memoryMb: zip(memory.map((bytes) => (bytes === null ? null : Math.round((bytes / 1024 / 1024) * 10) / 10))),
  };
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
