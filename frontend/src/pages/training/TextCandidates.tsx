// A finished text job's "Candidates on validation": every model family the engine tried (a linear
// model and a fastText-style one on hashed n-grams, a character CNN, a pretrained sentence
// encoder), which fit won inside it ("exact (L-BFGS)", "fine-tuned"), its validation figures at
// the epoch it kept, and the one kept marked; a row opens on each fit's validation accuracy or
// why it did not run. A family or fit the budget left no time for says why (the engine's words,
// read by the API in the request's language: sampan.training.stored_texts).
import { CheckCircleFilled } from "@ant-design/icons";
import { Card, Table, Tag, Typography } from "antd";
import { useTranslation } from "react-i18next";

import type { TrainingJob } from "../../api/queries/training";
import { formatDuration } from "./jobState";
import { percentText } from "./jobText";
import { candidateRows, familyName, fitName, fitRows, textRecipeOf, type CandidateRow } from "./textJob";

const figure = (x: number | null | undefined) => (typeof x === "number" ? percentText(x) : "—");

/** Each fit of a family: its validation figures, or why it did not run; the one that won marked. */
function FitList({ row }: { row: CandidateRow }) {
  const { t } = useTranslation();
  return (
    <ul data-testid="candidate-fits" aria-label={t("training.text.fitsOf", { family: familyName(t, row.family) })} style={{ margin: 0, paddingLeft: 20 }}>
      {fitRows(row.family, row.candidate).map(({ fit, won, figures }) => (
        <li key={fit} data-testid="candidate-fit">
          {typeof figures.skipped === "string" ? (
            <Typography.Text type="secondary">{t("training.text.fitSkipped", { fit: fitName(t, fit), reason: figures.skipped })}</Typography.Text>
          ) : (
            t("training.text.fitFigures", { fit: fitName(t, fit), accuracy: figure(figures.val_accuracy), balanced: figure(figures.val_balanced_accuracy) })
          )}
          {won && (
            <>
              {" "}
              <Tag color={row.winner ? "success" : "default"} data-testid="candidate-fit-won">
                {t("training.text.fitWon")}
              </Tag>
            </>
          )}
        </li>
      ))}
    </ul>
  );
}

export function CandidatesCard({ job }: { job: Pick<TrainingJob, "recipe"> }) {
  const { t } = useTranslation();
  const rows = candidateRows(textRecipeOf(job));
  if (rows.length === 0) return null;
  const skipped = (r: CandidateRow) => typeof r.candidate.skipped === "string";
  // a skipped family's reason spans the fit's and the figures' columns
  const span = (r: CandidateRow, first: boolean) => (skipped(r) ? { colSpan: first ? 5 : 0 } : {});
  return (
    <Card size="small" title={t("training.text.candidates")} data-testid="text-candidates">
      <Table<CandidateRow>
        rowKey="family"
        size="small"
        pagination={false}
        dataSource={rows}
        onRow={(r) => (r.winner ? { style: { background: "#f6ffed" } } : {})}
        // a family trained by several fits opens on each one's figures (or why it did not run)
        expandable={{ rowExpandable: (r) => !skipped(r) && fitRows(r.family, r.candidate).length > 1, expandedRowRender: (r) => <FitList row={r} /> }}
        columns={[
          {
            title: t("training.text.family"),
            key: "family",
            render: (_, r) => (
              <span data-testid="candidate-family">
                {familyName(t, r.family)}{" "}
                {r.winner && (
                  <Tag color="success" icon={<CheckCircleFilled />} data-testid="candidate-winner">
                    {t("training.text.winner")}
                  </Tag>
                )}
              </span>
            ),
          },
          {
            title: t("training.text.fit"),
            key: "fit",
            onCell: (r) => span(r, true),
            render: (_, r) =>
              skipped(r) ? (
                <Typography.Text type="secondary" data-testid="candidate-skipped">
                  {t("training.text.skipped", { reason: r.candidate.skipped })}
                </Typography.Text>
              ) : (
                <span data-testid="candidate-fit-kept">{fitName(t, r.candidate.fit)}</span>
              ),
          },
          {
            title: t("training.valAccuracy"),
            key: "accuracy",
            onCell: (r) => span(r, false),
            render: (_, r) => figure(r.candidate.val_accuracy),
          },
          {
            title: t("training.text.balancedAccuracy"),
            key: "balanced",
            onCell: (r) => span(r, false),
            render: (_, r) => figure(r.candidate.val_balanced_accuracy),
          },
          {
            title: t("training.text.keptEpoch"),
            key: "epoch",
            onCell: (r) => span(r, false),
            render: (_, r) =>
              typeof r.candidate.kept_epoch === "number"
                ? typeof r.candidate.epochs_done === "number"
                  ? t("training.text.keptOf", { epoch: r.candidate.kept_epoch, epochs: r.candidate.epochs_done })
                  : String(r.candidate.kept_epoch)
                : "—",
          },
          {
            title: t("training.text.trainTime"),
            key: "time",
            onCell: (r) => span(r, false),
            render: (_, r) => (typeof r.candidate.train_s === "number" ? formatDuration(r.candidate.train_s) : "—"),
          },
        ]}
      />
      <Typography.Paragraph type="secondary" style={{ margin: "8px 0 0", fontSize: 12 }}>
        {t("training.text.candidatesHint")}
      </Typography.Paragraph>
    </Card>
  );
}
