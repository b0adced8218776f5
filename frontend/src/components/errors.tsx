// The one error path of the console: every API failure is an ApiError (src/api/errors.ts) and is
// shown where it happened — inline for a page's data (ErrorAlert), on the form field the server
// named, or as a message next to the action that failed (useReportError).
import { Alert, App, Button, type FormInstance } from "antd";
import { useCallback } from "react";
import { useTranslation } from "react-i18next";

import { isApiError, NETWORK_ERROR, UNEXPECTED_RESPONSE } from "../api/errors";

/** The text a person reads for an error: the server's own message where there is one. */
export function useErrorText(): (error: unknown) => string {
  const { t } = useTranslation();
  return useCallback(
    (error: unknown) => {
      if (isApiError(error)) {
        if (error.code === NETWORK_ERROR) return t("errors.network", { detail: error.message });
        if (error.code === UNEXPECTED_RESPONSE) return t("errors.unexpected", { detail: error.message });
        return error.message;
      }
      return error instanceof Error ? error.message : String(error);
    },
    [t],
  );
}

/**
 * Reports a failed action: on the form field the server named (`error.field`) when the form has
 * it, otherwise as a message.
 */
export function useReportError(): (error: unknown, form?: FormInstance) => void {
  const { message } = App.useApp();
  const errorText = useErrorText();
  return useCallback(
    (error: unknown, form?: FormInstance) => {
      const text = errorText(error);
      if (form && isApiError(error) && error.field && fieldExists(form, error.field)) {
        form.setFields([{ name: error.field, errors: [text] }]);
        return;
      }
      void message.error(text);
    },
    [errorText, message],
  );
}

function fieldExists(form: FormInstance, field: string): boolean {
  // getFieldsValue() lists every registered field, with undefined for an empty one
  return Object.prototype.hasOwnProperty.call(form.getFieldsValue(), field);
}

/**
 * A page's data failed to load: the server's message in place of the content, with a retry
 * (`actionLabel` names another action, such as Reload after a 412).
 */
export function ErrorAlert({ error, onRetry, actionLabel }: { error: unknown; onRetry?: () => void; actionLabel?: string }) {
  const { t } = useTranslation();
  const errorText = useErrorText();
  return (
    <Alert
      type="error"
      showIcon
      role="alert"
      title={t("errors.title")}
      description={errorText(error)}
      action={onRetry ? <Button size="small" onClick={onRetry}>{actionLabel ?? t("common.retry")}</Button> : undefined}
    />
  );
}
