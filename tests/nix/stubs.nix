# tests/nix/stubs.nix: the NixOS options nix/ sets, declared loosely so that
# nixpkgs' module system (lib.evalModules) can evaluate the modules without
# NixOS itself; the test reads what the modules put in them. pkgs holds a
# stand-in fleetd package (a derivation's shape, never built).
{ lib, ... }:
let
  inherit (lib) mkOption types;
  loose = mkOption {
    type = types.attrsOf types.anything;
    default = { };
  };
in
{
  options = {
    systemd.services = loose;
    systemd.timers = loose;
    systemd.paths = loose;
    users.users = loose;
    users.groups = loose;
    environment.etc = loose;
    assertions = mkOption {
      type = types.listOf types.unspecified;
      default = [ ];
    };
    warnings = mkOption {
      type = types.listOf types.str;
      default = [ ];
    };
  };
  config._module.args.pkgs = {
    fleetd = {
      type = "derivation";
      name = "fleetd-0";
      outPath = "${builtins.storeDir}/00000000000000000000000000000000-fleetd-0";
    };
  };
}
