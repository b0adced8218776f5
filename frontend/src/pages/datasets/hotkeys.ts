// Which key labels which class: keys follow what the person sees. A new user on the digits dataset
// pressed 3 on a "3" and saved "2" when keys were class positions (1 -> the first class, "0").
// Pure, so both labeling panels, the key editor and the tests share one rule:
//   1. a key chosen for the class (stored on the server, `hotkey`; platform/sampan/datasets/hotkeys.py);
//   2. a class named by one digit or letter gets that key ("3" -> 3, "A" -> a);
//   3. the other classes, in position order, get the free keys 1-9, 0, then a-z;
// never N or P (next / previous sample in both panels). A class past the last free key has none.

/** Keys the labeling panels use themselves; platform/sampan/datasets/hotkeys.py refuses them too. */
export const RESERVED_KEYS: readonly string[] = ["n", "p"];

/** Every key a class can have, in the order free keys are handed out. */
export const KEY_ORDER: readonly string[] = [..."1234567890abcdefghijklmnopqrstuvwxyz"].filter((k) => !RESERVED_KEYS.includes(k));

export interface KeyedClass {
  id: string;
  name: string;
  position: number;
  /** The key chosen on the server, "" (or absent) for the automatic one. */
  hotkey?: string;
}

/** A key as the panels compare it: one lower-case character of 0-9, a-z; null for anything else. */
export function normaliseKey(raw: string): string | null {
  const key = raw.trim().toLowerCase();
  return key.length === 1 && KEY_ORDER.includes(key) ? key : null;
}

/** The key a class's name asks for: "3" -> "3", "A" -> "a"; null for longer names. */
export function keyOfName(name: string): string | null {
  return normaliseKey(name);
}

/** Class id -> its key, by the rule at the top of this module. */
export function assignHotkeys(classes: readonly KeyedClass[]): Map<string, string> {
  const ordered = [...classes].sort((a, b) => a.position - b.position);
  const keys = new Map<string, string>();
  const taken = new Set<string>();
  const give = (id: string, key: string | null) => {
    if (key === null || taken.has(key) || keys.has(id)) return;
    keys.set(id, key);
    taken.add(key);
  };
  for (const c of ordered) give(c.id, normaliseKey(c.hotkey ?? ""));
  for (const c of ordered) give(c.id, keyOfName(c.name));
  const free = KEY_ORDER.filter((k) => !taken.has(k));
  for (const c of ordered) {
    if (!keys.has(c.id)) give(c.id, free.shift() ?? null);
  }
  return keys;
}

/**
 * The class a key press labels with, or null. `event.key` first ("3", "C" with Shift or Caps
 * Lock); then the physical key (`code` "Digit3", "KeyC"), so that a layout whose digit row types
 * other characters without Shift (AZERTY: "é" on Digit2) or another alphabet still reaches them.
 */
export function classIdForKey(keys: Map<string, string>, event: { key: string; code?: string }): string | null {
  const byKey = new Map([...keys].map(([id, key]) => [key, id]));
  const typed = normaliseKey(event.key);
  if (typed !== null && event.key.length === 1) return byKey.get(typed) ?? null;
  const physical = /^(?:Digit|Key)([0-9A-Z])$/.exec(event.code ?? "")?.[1];
  return physical ? (byKey.get(physical.toLowerCase()) ?? null) : null;
}
