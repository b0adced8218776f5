// The zip layouts an object detection dataset takes (COCO, Pascal VOC, YOLO), with a short
// example of each, shown on its upload tab instead of the class-folder explanation.
import { Card, Space, Typography } from "antd";
import { useTranslation } from "react-i18next";

// file trees are the same in every language
const EXAMPLES = {
  coco: ["train/_annotations.coco.json", "train/0001.jpg", "valid/_annotations.coco.json", "valid/0002.jpg"],
  voc: ["Annotations/0001.xml", "JPEGImages/0001.jpg", "ImageSets/Main/train.txt"],
  yolo: ["data.yaml              names: [cat, dog]", "images/train/0001.jpg", "labels/train/0001.txt  0 0.51 0.40 0.22 0.30"],
} as const;
const NAMES = { coco: "COCO", voc: "Pascal VOC", yolo: "YOLO" } as const;
const TEXT_KEYS = { coco: "upload.formatCoco", voc: "upload.formatVoc", yolo: "upload.formatYolo" } as const;

export function DetectionFormatsHelp() {
  const { t } = useTranslation();
  return (
    <Card size="small" title={t("upload.formatsTitle")} data-testid="detection-formats">
      <Space orientation="vertical" style={{ width: "100%" }}>
        <Typography.Text type="secondary">{t("upload.formatsIntro")}</Typography.Text>
        {(["coco", "voc", "yolo"] as const).map((format) => (
          <div key={format} data-format={format}>
            <Typography.Text strong>{NAMES[format]}</Typography.Text>: {t(TEXT_KEYS[format])}
            <pre style={{ margin: "4px 0 0", fontSize: 12, overflowX: "auto" }}>{EXAMPLES[format].join("\n")}</pre>
          </div>
        ))}
      </Space>
    </Card>
  );
}
