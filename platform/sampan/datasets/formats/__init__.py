"""Object detection dataset formats in and out: COCO, Pascal VOC and YOLO (no Django).

- ``reader.read_detection_archive``: which format an extracted zip holds (from its files'
  content) and its boxes, per image, as the files give them, with everything skipped named;
- ``geometry.place_boxes``: those boxes on the stored upright image (scaled, clipped, turned by
  the EXIF orientation, rounded to 1/1000 px);
- ``coco``, ``voc``, ``yolo``: each format's reader and writer;
- ``export.export_chunks``: a dataset version as a zip in any of them, streamed;
- ``zipstream.ZipStream``: a zip written into a non-seekable buffer, chunk by chunk.

Conventions and layouts: docs/contracts.md, "Detection dataset formats".
"""
