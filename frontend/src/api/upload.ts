// Multipart upload with progress. fetch() cannot report upload progress, so this one call uses
// XMLHttpRequest; its URL, form fields and response type still come from the OpenAPI schema.
import { csrfHeaders } from "./csrf";
import { apiErrorFrom, networkError } from "./errors";
import { languageHeaders } from "./language";
import type { paths } from "./schema";

type ImportsPost = paths["/api/v1/projects/{project_id}/datasets/{dataset_id}/imports/"]["post"];
export type ImportJob = ImportsPost["responses"]["202"]["content"]["application/json"];
type ImportForm = ImportsPost["requestBody"]["content"]["multipart/form-data"];

/** How a text classification dataset reads CSV / TSV tables and XLSX workbooks: optional form
 * fields of an import (empty or absent: the server chooses). */
export type TextImportFields = Partial<Pick<ImportForm, "text_column" | "label_column" | "encoding" | "sheet">>;

/** The fields of `text` that are set (an empty value is the server's choice, so it is not sent). */
export function textImportEntries(text: TextImportFields | undefined): [keyof TextImportFields, string][] {
  return Object.entries(text ?? {}).filter((entry): entry is [keyof TextImportFields, string] => typeof entry[1] === "string" && entry[1] !== "");
}

/**
 * Django refuses a request with more files than DATA_UPLOAD_MAX_NUMBER_FILES (default 100),
 * so many loose files go up in batches of this size, one import job per batch.
 */
export const MAX_FILES_PER_REQUEST = 100;

export interface UploadProgress {
  loaded: number; // bytes sent
  total: number; // bytes to send
}

export function importUrl(projectId: string, datasetId: string): string {
  return `/api/v1/projects/${encodeURIComponent(projectId)}/datasets/${encodeURIComponent(datasetId)}/imports/`;
}

/** Uploads files as one import; resolves with the import job (202), rejects with an ApiError. */
export function uploadImport(options: {
  projectId: string;
  datasetId: string;
  files: File[];
  label?: ImportForm["label"];
  /** text datasets: the columns and encoding chosen in the upload panel */
  text?: TextImportFields;
  onProgress?: (progress: UploadProgress) => void;
  signal?: AbortSignal;
}): Promise<ImportJob> {
  const form = new FormData();
  for (const file of options.files) form.append("files", file, file.name);
  if (options.label) form.append("label", options.label);
  for (const [name, value] of textImportEntries(options.text)) form.append(name, value);

  return new Promise<ImportJob>((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", importUrl(options.projectId, options.datasetId));
    xhr.withCredentials = true;
    xhr.setRequestHeader("Accept", "application/json");
    for (const [name, value] of Object.entries({ ...csrfHeaders("POST"), ...languageHeaders() })) {
      xhr.setRequestHeader(name, value);
    }
    xhr.upload.onprogress = (event) => {
      if (event.lengthComputable) options.onProgress?.({ loaded: event.loaded, total: event.total });
    };
    xhr.onload = () => {
      let body: unknown = xhr.responseText;
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        // not JSON: apiErrorFrom describes it
      }
      if (xhr.status >= 200 && xhr.status < 300) resolve(body as ImportJob);
      else reject(apiErrorFrom(xhr.status, body, xhr.statusText));
    };
    xhr.onerror = () => reject(networkError(new Error("upload failed: connection lost")));
    xhr.onabort = () => reject(networkError(new Error("upload cancelled")));
    options.signal?.addEventListener("abort", () => xhr.abort());
    xhr.send(form);
  });
}

/** Files at least this large go up resumably (tus, api/resumable.ts), each as its own import. */
export const RESUMABLE_MIN_BYTES = 16 * 1024 * 1024;

/** One step of an upload: a file sent resumably, or a batch of small files in one request. */
export type UploadStep = { kind: "resumable"; file: File } | { kind: "batch"; files: File[] };

/** Zips and large files go up resumably one by one; small loose files in request-sized batches
 * (one multipart request each). */
export function uploadPlan(files: File[], size = MAX_FILES_PER_REQUEST): UploadStep[] {
  const resumable = (file: File) => isZip(file) || file.size >= RESUMABLE_MIN_BYTES;
  const steps: UploadStep[] = files.filter(resumable).map((file) => ({ kind: "resumable", file }));
  const loose = files.filter((file) => !resumable(file));
  for (let i = 0; i < loose.length; i += size) steps.push({ kind: "batch", files: loose.slice(i, i + size) });
  return steps;
}

export function stepFiles(step: UploadStep): File[] {
  return step.kind === "resumable" ? [step.file] : step.files;
}

export function isZip(file: File): boolean {
  return file.name.toLowerCase().endsWith(".zip") || file.type === "application/zip";
}
