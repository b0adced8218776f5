from django.contrib import admin

from sampan.uploads.models import Upload


@admin.register(Upload)
class UploadAdmin(admin.ModelAdmin):
    list_display = ["id", "owner", "filename", "length", "offset", "status", "expires_at"]
    list_filter = ["status"]
    readonly_fields = ["length", "offset", "status", "completed_at"]
