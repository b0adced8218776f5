import uuid

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='Upload',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('length', models.BigIntegerField(help_text='Upload-Length, bytes')),
                ('offset', models.BigIntegerField(default=0, help_text='bytes received, bytes')),
                ('filename', models.CharField(blank=True, default='', max_length=500)),
                ('filetype', models.CharField(blank=True, default='', max_length=200)),
                ('status', models.CharField(choices=[('receiving', 'Receiving'), ('complete', 'Complete'), ('consumed', 'Consumed')], db_index=True, default='receiving', max_length=16)),
                ('expires_at', models.DateTimeField(db_index=True)),
                ('completed_at', models.DateTimeField(blank=True, null=True)),
                ('owner', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='uploads', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['created_at', 'id'],
                'constraints': [models.CheckConstraint(condition=models.Q(('length__gte', 0)), name='upload_length_not_negative'), models.CheckConstraint(condition=models.Q(('offset__gte', 0), ('offset__lte', models.F('length'))), name='upload_offset_within_length')],
            },
        ),
    ]
