from django.contrib import admin

from sampan.accounts.models import ApiToken, Membership, Project

admin.site.register(Project)
admin.site.register(Membership)
admin.site.register(ApiToken)
