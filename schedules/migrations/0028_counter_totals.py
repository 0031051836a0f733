from django.db import migrations, models
from django.db.models import F, Sum
from django.db.models.functions import Round

SUMS = ("duration_sum", "lateness_sum")
STEPS = 16384  # counter_totals.SUM_STEPS, as of this migration


def count_totals(apps, schema_editor) -> None:
    """The sums of seconds to 1/16384 s steps (exact from now on), then the totals of
    every counter so far, in the base shard."""
    RunCounter = apps.get_model("schedules", "RunCounter")
    CounterTotal = apps.get_model("schedules", "CounterTotal")
    RunCounter.objects.filter(name__in=SUMS).update(value=Round(F("value") * STEPS) / STEPS)
    totals = RunCounter.objects.values_list("name").annotate(total=Sum("value")).order_by()
    CounterTotal.objects.bulk_create(
        [CounterTotal(shard="", name=name, value=total) for name, total in totals]
    )


class Migration(migrations.Migration):
    dependencies = [
        ("schedules", "0027_run_scheduler_no_index"),
    ]

    operations = [
        migrations.CreateModel(
            name="CounterTotal",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("shard", models.CharField(max_length=100)),
                ("name", models.CharField(max_length=40)),
                ("value", models.FloatField(default=0.0)),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("shard", "name"), name="counter_total_unique")
                ],
            },
        ),
        migrations.RunPython(count_totals, migrations.RunPython.noop),
    ]
