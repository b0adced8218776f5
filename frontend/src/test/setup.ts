import "@testing-library/jest-dom/vitest";
import "../i18n";

import { cleanup, configure } from "@testing-library/react";
import { afterEach } from "vitest";

afterEach(() => cleanup());

// findBy* and waitFor wait up to 5 s (the library's default is 1 s): a page that asks three
// queries in a row before it shows a value took longer than 1 s on a busy 2-core machine
configure({ asyncUtilTimeout: 5_000 });

// antd reads these; jsdom has neither
if (!window.matchMedia) {
  window.matchMedia = (query: string) =>
    ({
      matches: false,
      media: query,
      onchange: null,
      addListener: () => {},
      removeListener: () => {},
      addEventListener: () => {},
      removeEventListener: () => {},
      dispatchEvent: () => false,
    }) as MediaQueryList;
}
if (!("ResizeObserver" in window)) {
  (window as unknown as { ResizeObserver: unknown }).ResizeObserver = class {
    observe() {}
    unobserve() {}
    disconnect() {}
  };
}

// jsdom does not implement getComputedStyle(element, pseudoElement); antd's tables ask for it
const computedStyle = window.getComputedStyle.bind(window);
window.getComputedStyle = (element: Element) => computedStyle(element);
