import { describe, expect, it } from "vitest";

import { assignHotkeys, classIdForKey, KEY_ORDER, normaliseKey, type KeyedClass } from "./hotkeys";

const classes = (names: string[], hotkeys: Record<string, string> = {}): KeyedClass[] =>
  names.map((name, position) => ({ id: `id-${name}`, name, position, hotkey: hotkeys[name] ?? "" }));

/** class name -> key, in position order */
const keysOf = (list: KeyedClass[]) => {
  const keys = assignHotkeys(list);
  return Object.fromEntries([...list].sort((a, b) => a.position - b.position).map((c) => [c.name, keys.get(c.id) ?? null]));
};

const press = (list: KeyedClass[], key: string, code?: string) => {
  const id = classIdForKey(assignHotkeys(list), { key, code });
  return list.find((c) => c.id === id)?.name ?? null;
};

describe("assignHotkeys", () => {
  it("gives the digits 0..9 their own digit: key 3 labels \"3\" (the bug: it labeled \"2\")", () => {
    const digits = classes(["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]);
    expect(keysOf(digits)).toEqual({ 0: "0", 1: "1", 2: "2", 3: "3", 4: "4", 5: "5", 6: "6", 7: "7", 8: "8", 9: "9" });
    expect(press(digits, "3")).toBe("3");
    expect(press(digits, "0")).toBe("0");
  });

  it("gives other names the free keys in class order: cat 1, dog 2", () => {
    expect(keysOf(classes(["cat", "dog"]))).toEqual({ cat: "1", dog: "2" });
  });

  it("lets a one-character name keep its key and hands the rest out around it", () => {
    // "1" keeps key 1 although it comes third; "A" takes a (case does not matter)
    expect(keysOf(classes(["cat", "dog", "1", "A"]))).toEqual({ cat: "2", dog: "3", 1: "1", A: "a" });
    // two names asking for one key: the first in class order gets it, the other a free key
    expect(keysOf(classes(["a", "A"]))).toEqual({ a: "a", A: "1" });
  });

  it("follows the position, not the order the list comes in", () => {
    const list: KeyedClass[] = [
      { id: "d", name: "dog", position: 1 },
      { id: "c", name: "cat", position: 0 },
    ];
    expect(assignHotkeys(list)).toEqual(new Map([["c", "1"], ["d", "2"]]));
  });

  it("puts a chosen key first: it wins over a name and over the order", () => {
    const list = classes(["cat", "dog", "3"], { dog: "3", cat: "C" });
    expect(keysOf(list)).toEqual({ cat: "c", dog: "3", 3: "1" });
    expect(press(list, "3")).toBe("dog");
    expect(press(list, "c")).toBe("cat");
    expect(press(list, "C")).toBe("cat"); // Shift or Caps Lock
  });

  it("never hands out N or P (next / previous sample), and runs out after 34 classes", () => {
    expect(KEY_ORDER).toHaveLength(34);
    expect(KEY_ORDER).not.toContain("n");
    expect(KEY_ORDER).not.toContain("p");
    const many = classes(Array.from({ length: 40 }, (_, i) => `class ${i}`));
    const keys = Object.values(keysOf(many));
    expect(keys.slice(0, 12)).toEqual(["1", "2", "3", "4", "5", "6", "7", "8", "9", "0", "a", "b"]);
    expect(keys.slice(12, 15)).toEqual(["c", "d", "e"]);
    expect(keys).not.toContain("n");
    expect(keys.filter((k) => k === null)).toHaveLength(6);
    // a class named "n" cannot have key n; a stored "p" (refused by the server anyway) is ignored
    expect(keysOf(classes(["n", "x"], { x: "p" }))).toEqual({ n: "1", x: "x" });
  });
});

describe("classIdForKey", () => {
  const pets = classes(["cat", "dog"]);

  it("maps a key to its class and nothing else to anything", () => {
    expect(press(pets, "1")).toBe("cat");
    expect(press(pets, "2")).toBe("dog");
    expect(press(pets, "3")).toBeNull();
    expect(press(pets, "n", "KeyN")).toBeNull();
    expect(press(pets, "ArrowRight", "ArrowRight")).toBeNull();
    expect(press(pets, "Escape", "Escape")).toBeNull();
  });

  it("falls back to the physical key when the layout types another character (AZERTY's digit row)", () => {
    expect(press(pets, "é", "Digit2")).toBe("dog");
    expect(press(pets, "&", "Digit1")).toBe("cat");
    // a key that is itself a class key is taken as typed, not by its place
    expect(press(pets, "2", "Digit1")).toBe("dog");
  });

  it("normalises what the key editor accepts", () => {
    expect(normaliseKey(" C ")).toBe("c");
    expect(normaliseKey("7")).toBe("7");
    expect(normaliseKey("cd")).toBeNull();
    expect(normaliseKey("p")).toBeNull();
    expect(normaliseKey("!")).toBeNull();
  });
});
