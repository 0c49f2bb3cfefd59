# tests/nix.cmake: nix/'s NixOS modules evaluated for real (nix-bin and
# nixpkgs' lib from ../shared/contracts; skips without them), their
# fleetd.yaml checked by fleetd itself, their units held to the tree's.
fleet_script_test(nix_module unit nix/test_nix_module.sh $<TARGET_FILE:fleetd>)
