// Speed and time left of an upload, from the bytes sent over the last few seconds (a sliding
// window follows a connection that slows down or stalls, which an average since the start hides).

export const WINDOW_MS = 5000;

interface Sample {
  at: number; // ms
  loaded: number; // bytes
}

export class RateMeter {
  private samples: Sample[] = [];

  /** Record that `loaded` bytes are sent at time `at` (ms). A drop (a resume from the server's
   * offset after a cut) restarts the window. */
  record(loaded: number, at: number): void {
    const last = this.samples[this.samples.length - 1];
    if (last && loaded < last.loaded) this.samples = [];
    this.samples.push({ at, loaded });
    while (this.samples.length > 2 && at - (this.samples[1]?.at ?? at) >= WINDOW_MS) this.samples.shift();
  }

  /** Bytes per second over the window; null until two samples span some time. */
  bytesPerSecond(): number | null {
    const first = this.samples[0];
    const last = this.samples[this.samples.length - 1];
    if (!first || !last || last.at - first.at < 200) return null;
    return ((last.loaded - first.loaded) * 1000) / (last.at - first.at);
  }

  /** Seconds until `total` bytes at the current speed; null when unknown (no speed yet, stalled). */
  secondsLeft(total: number): number | null {
    const rate = this.bytesPerSecond();
    const last = this.samples[this.samples.length - 1];
    if (!rate || rate <= 0 || !last) return null;
    return Math.max(0, (total - last.loaded) / rate);
  }
}

/** Megabytes (10^6 bytes) per second, one decimal: 12_345_678 -> "12.3 MB/s". */
export function formatSpeed(bytesPerSecond: number): string {
  return `${(bytesPerSecond / 1e6).toFixed(1)} MB/s`;
}

/** A duration for people in `language`: 75 -> "1 min 15 sec" ("1分钟 15秒"); hours and minutes
 * past an hour. */
export function formatDuration(seconds: number, language: string): string {
  const whole = Math.max(0, Math.round(seconds));
  const unit = (value: number, name: "hour" | "minute" | "second") =>
    new Intl.NumberFormat(language, { style: "unit", unit: name, unitDisplay: "short" }).format(value);
  const hours = Math.floor(whole / 3600);
  const minutes = Math.floor((whole % 3600) / 60);
  const secs = whole % 60;
  if (hours > 0) return `${unit(hours, "hour")} ${unit(minutes, "minute")}`;
  if (minutes > 0) return `${unit(minutes, "minute")} ${unit(secs, "second")}`;
  return unit(secs, "second");
}
