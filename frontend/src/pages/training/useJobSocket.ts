// The job's websocket: connects while the job runs, reconnects (the server re-reads the database
// and sends the current state) after 1, 2, 4 ... up to 10 s. It returns whether the socket is
// live: open AND a message came in the last FRESH_MS. An open socket that stays silent (server
// side trouble, a quiet phase) is not trusted, so the page falls back to polling every 2 s.
// The state sent on connect ({status, progress, error}: all three keys, which no later event has)
// does not count: only events prove that the server is publishing to this socket.
import { useEffect, useRef, useState } from "react";

import type { JobMessage } from "./jobState";

export function jobSocketUrl(kind: "training" | "import" | "compression", jobId: string, location: Location = window.location): string {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  return `${scheme}://${location.host}/ws/jobs/${kind}/${jobId}/`;
}

export const FRESH_MS = 4000;

export function isConnectSnapshot(message: object): boolean {
  return "status" in message && "progress" in message && "error" in message;
}

export function useJobSocket(url: string, enabled: boolean, onMessage: (message: JobMessage) => void): boolean {
  const [connected, setConnected] = useState(false);
  const [fresh, setFresh] = useState(false);
  const lastMessageAt = useRef(0);
  const handler = useRef(onMessage);
  handler.current = onMessage;

  useEffect(() => {
    if (!enabled || typeof WebSocket === "undefined") return undefined;
    let socket: WebSocket | null = null;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let delay = 1000;
    let stopped = false;

    const open = () => {
      socket = new WebSocket(url);
      socket.onopen = () => {
        delay = 1000;
        setConnected(true);
      };
      socket.onmessage = (event) => {
        let message: JobMessage;
        try {
          message = JSON.parse(String(event.data)) as JobMessage;
        } catch {
          return; // not JSON: ignore, the polling fallback still brings the state
        }
        if (!isConnectSnapshot(message)) {
          lastMessageAt.current = Date.now();
          setFresh(true);
        }
        handler.current(message);
      };
      socket.onclose = () => {
        setConnected(false);
        if (stopped) return;
        timer = setTimeout(open, delay);
        delay = Math.min(10_000, delay * 2);
      };
    };
    open();
    return () => {
      stopped = true;
      clearTimeout(timer);
      setConnected(false);
      socket?.close();
    };
  }, [url, enabled]);

  useEffect(() => {
    if (!connected) {
      setFresh(false);
      return undefined;
    }
    const timer = setInterval(() => setFresh(Date.now() - lastMessageAt.current < FRESH_MS), 1000);
    return () => clearInterval(timer);
  }, [connected]);

  return connected && fresh;
}
