# tests/nix/eval.nix: evaluate nix/ (all three modules) with the stubs, the
# example configuration and an optional override module (a bad value the
# test expects refused), and give back what test_nix_module.sh checks:
# fleetd.yaml as rendered, the units, the users. NixOS would refuse a
# configuration with a false assertion; evalModules does not look at them,
# so this does, and throws their messages.
{
  nixpkgsLib,
  override ? { }, # a module, given with --arg override
}:
let
  lib = import nixpkgsLib;
  eval = lib.evalModules {
    modules = [
      ../../nix
      ./stubs.nix
      ./example.nix
      override
    ];
  };
  c = eval.config;
  failed = builtins.filter (a: !a.assertion) c.assertions;
in
if failed != [ ] then
  throw ("failed assertions:\n" + lib.concatMapStrings (a: "- ${a.message}\n") failed)
else
  {
    yaml = c.environment.etc."fleetd/fleetd.yaml".text;
    etc = removeAttrs c.environment.etc."fleetd/fleetd.yaml" [ "text" ];
    systemd = { inherit (c.systemd) services timers paths; };
    inherit (c.users) users groups;
    inherit (c) warnings;
  }
