"""Object detection dataset formats: COCO, Pascal VOC and YOLO (no Django).

- ``reader.read_detection_archive``: which format an extracted zip holds (from its files'
  content) and its boxes, per image, as the files give them, with everything skipped named;
- ``geometry.place_boxes``: those boxes on the stored upright image (scaled, clipped, turned by
  the EXIF orientation, rounded to 1/1000 px);
- ``coco``, ``voc``, ``yolo``: each format's reader and writer.

Conventions and layouts: docs/contracts.md, "Detection dataset formats".
"""
