// The language the API answers in: every request names the console's language in
// Accept-Language (the server's messages are translated there, Django's LocaleMiddleware; the
// browser's own Accept-Language would name the browser's language, not the one chosen in the
// console). src/i18n sets it at start and whenever the person switches language.
let language = "en";

export function setRequestLanguage(value: string): void {
  language = value;
}

/** Headers that ask the API for messages in the console's language. */
export function languageHeaders(): Record<string, string> {
  return { "Accept-Language": language };
}
