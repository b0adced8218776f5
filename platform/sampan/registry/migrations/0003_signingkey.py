from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("registry", "0002_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="SigningKey",
            fields=[
                ("key_id", models.CharField(max_length=16, primary_key=True, serialize=False)),
                ("public_key", models.CharField(max_length=64, unique=True)),
                ("state", models.CharField(choices=[("active", "Active"), ("trusted", "Trusted"),
                                                    ("retired", "Retired")], max_length=8)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("retired_at", models.DateTimeField(blank=True, null=True)),
            ],
            options={
                "ordering": ["created_at"],
                "constraints": [models.UniqueConstraint(condition=models.Q(("state", "active")),
                                                        fields=("state",),
                                                        name="signing_key_one_active")],
            },
        ),
    ]
