"""Object detection in the ML engine: an FCOS detector on an ImageNet MobileNetV2 with a feature
pyramid, trained within a budget, evaluated with COCO mAP, exported to ONNX with a parity gate
(no Django, no Celery; see docs/decisions/detection.md)."""
