# Man pages (docs/man/*.md through scripts/mkman.py): each renders without a
# groff warning and names every option its program's usage prints.
fleet_script_test(test_man unit man/test_man.sh)
