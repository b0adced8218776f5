// A finished text job's "Candidates on validation": every model family the engine tried (a linear
// model and a fastText-style one on the same hashed n-gram features), its validation figures at
// the epoch it kept, and the one kept marked; a family the budget left no time for says why (the
// engine's words, in English as the other engine reasons are).
import { CheckCircleFilled } from "@ant-design/icons";
import { Card, Table, Tag, Typography } from "antd";
import { useTranslation } from "react-i18next";

import type { TrainingJob } from "../../api/queries/training";
import { formatDuration } from "./jobState";
import { percentText } from "./jobText";
import { candidateRows, familyName, textRecipeOf, type CandidateRow } from "./textJob";

const figure = (x: number | null | undefined) => (typeof x === "number" ? percentText(x) : "—");

export function CandidatesCard({ job }: { job: Pick<TrainingJob, "recipe"> }) {
  const { t } = useTranslation();
  const rows = candidateRows(textRecipeOf(job));
  if (rows.length === 0) return null;
  const skipped = (r: CandidateRow) => typeof r.candidate.skipped === "string";
  // a skipped family's reason spans the figures' columns
  const span = (r: CandidateRow, first: boolean) => (skipped(r) ? { colSpan: first ? 4 : 0 } : {});
  return (
    <Card size="small" title={t("training.text.candidates")} data-testid="text-candidates">
      <Table<CandidateRow>
        rowKey="family"
        size="small"
        pagination={false}
        dataSource={rows}
        onRow={(r) => (r.winner ? { style: { background: "#f6ffed" } } : {})}
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
            title: t("training.valAccuracy"),
            key: "accuracy",
            onCell: (r) => span(r, true),
            render: (_, r) =>
              skipped(r) ? (
                <Typography.Text type="secondary" data-testid="candidate-skipped">
                  {t("training.text.skipped", { reason: r.candidate.skipped })}
                </Typography.Text>
              ) : (
                figure(r.candidate.val_accuracy)
              ),
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
