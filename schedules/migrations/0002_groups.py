"""The demo groups: Viewers, Operators (view + run, pause, resume, cancel), Editors."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

GROUPS = {
    "Viewers": ["view_schedule", "view_run", "view_schedulerinstance"],
    "Operators": ["view_schedule", "view_run", "view_schedulerinstance", "operate_schedule"],
    "Editors": [
        "view_schedule", "view_run", "view_schedulerinstance", "operate_schedule",
        "add_schedule", "change_schedule", "delete_schedule",
    ],
}  # fmt: skip


def create_groups(apps, schema_editor):
    # Permissions are normally created after migrations; groups need them now.
    for config in apps.get_app_configs():
        config.models_module = True
        create_permissions(config, apps=apps, verbosity=0)
        config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in GROUPS.items():
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.set(
            Permission.objects.filter(content_type__app_label="schedules", codename__in=codenames)
        )


class Migration(migrations.Migration):
    dependencies = [
        ("schedules", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]
    operations = [migrations.RunPython(create_groups, migrations.RunPython.noop)]
