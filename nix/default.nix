# nix/default.nix: every fleetd NixOS module at once; options are off until
# enabled (homelab.fleetd, homelab.tpmReattest, homelab.spireFleetEntries).
{
  imports = [
    ./services/fleetd.nix
    ./services/tpm-reattest.nix
    ./services/spire-fleet-entries.nix
  ];
}
