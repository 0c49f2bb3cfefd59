# fleetd/provision/: classes.json and class-inputs.json, rules K1-K6.
fleet_test(test_install_classes unit unit/test_install_classes.c LIBS fleetd_provision)
