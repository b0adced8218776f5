// Resumable uploads with the tus protocol (https://tus.io, tus-js-client): the file goes up in
// chunks to /api/v1/uploads/, a cut connection resumes from the offset the server holds, and a
// finished upload becomes an import by its id. The server side is platform/sampan/uploads/tus.py.
import { Upload, type DetailedError } from "tus-js-client";

import { api } from "./client";
import { csrfHeaders } from "./csrf";
import { languageHeaders } from "./language";
import { apiErrorFrom, networkError, unwrap } from "./errors";
import { textImportEntries, type ImportJob, type TextImportFields } from "./upload";

export const UPLOADS_ENDPOINT = "/api/v1/uploads/";
/** Bytes per PATCH: a cut costs at most this much again, and proxies see bounded requests. */
export const CHUNK_BYTES = 64 * 1024 * 1024;
/** Waits before each new try after a failure, ms (then the upload fails). */
export const RETRY_DELAYS_MS = [0, 1000, 3000, 5000, 10000, 20000, 30000, 60000];

export interface ResumableHandlers {
  onProgress?: (loaded: number, total: number) => void;
  /** The connection failed and the upload will resume from the server's offset. */
  onRetry?: (attempt: number) => void;
  signal?: AbortSignal;
}

/** Whether tus-js-client should try again: network errors, 5xx, 409 (offset mismatch) and 423
 * (the server still writing the cut request) are worth another try; other 4xx are final. */
export function shouldRetry(status: number): boolean {
  return status === 0 || status === 409 || status === 423 || status >= 500;
}

function errorOf(error: Error | DetailedError): Error {
  const response = "originalResponse" in error ? error.originalResponse : null;
  if (!response) return networkError(error);
  let body: unknown = response.getBody();
  try {
    body = JSON.parse(String(body));
  } catch {
    // not JSON: apiErrorFrom describes it
  }
  return apiErrorFrom(response.getStatus(), body);
}

/** Uploads `file` resumably; resolves with the upload's id once every byte is on the server. */
export function uploadResumable(file: File, handlers: ResumableHandlers = {}): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const upload = new Upload(file, {
      endpoint: UPLOADS_ENDPOINT,
      chunkSize: CHUNK_BYTES,
      retryDelays: RETRY_DELAYS_MS,
      metadata: { filename: file.name, filetype: file.type },
      headers: { ...csrfHeaders("POST"), ...languageHeaders(), Accept: "application/json" },
      // a page reloaded mid-upload finds the upload again by the file's fingerprint
      storeFingerprintForResuming: true,
      removeFingerprintOnSuccess: true,
      onProgress: (loaded, total) => handlers.onProgress?.(loaded, total),
      onShouldRetry: (error, attempt) => {
        const status = "originalResponse" in error ? (error.originalResponse?.getStatus() ?? 0) : 0;
        const again = shouldRetry(status);
        if (again) handlers.onRetry?.(attempt + 1);
        return again;
      },
      onSuccess: () => {
        const id = (upload.url ?? "").replace(/\/+$/, "").split("/").pop();
        if (id) resolve(id);
        else reject(networkError(new Error("the server gave the upload no address")));
      },
      onError: (error) => reject(errorOf(error)),
    });
    handlers.signal?.addEventListener("abort", () => {
      void upload.abort(true);
      reject(networkError(new Error("upload cancelled")));
    });
    void upload.findPreviousUploads().then((previous) => {
      const last = previous[0];
      if (last) upload.resumeFromPreviousUpload(last);
      upload.start();
    });
  });
}

/** An import job from a finished upload (POST imports with `upload_id`). */
export async function importFromUpload(options: {
  projectId: string;
  datasetId: string;
  uploadId: string;
  label?: string;
  /** text datasets: the columns and encoding chosen in the upload panel */
  text?: TextImportFields;
}): Promise<ImportJob> {
  return unwrap(
    await api().POST("/api/v1/projects/{project_id}/datasets/{dataset_id}/imports/", {
      params: { path: { project_id: options.projectId, dataset_id: options.datasetId } },
      body: {
        upload_id: options.uploadId,
        ...(options.label ? { label: options.label } : {}),
        ...Object.fromEntries(textImportEntries(options.text)),
      },
    }),
  );
}
