# nix/services/spire-fleet-entries.nix: homelab.spireFleetEntries, for the
# SPIRE server's host: the applier that makes fleetd's spire-nodes.json the
# server's entries (docs/spire.md), started by a path unit whenever fleetd
# writes the file. The units of spire-server-fleet-entries/ with the same
# sandbox.
{
  config,
  lib,
  pkgs,
  ...
}:
let
  cfg = config.homelab.spireFleetEntries;
  fl = import ../lib.nix lib;
  inherit (lib) mkOption;
in
{
  options.homelab.spireFleetEntries = {
    enable = lib.mkEnableOption "the SPIRE applier of fleetd's spire-nodes.json";
    package = lib.mkPackageOption pkgs "fleetd" {
      extraDescription = "It must provide bin/spire-server-fleet-entries.";
    };
    file = mkOption {
      type = fl.absPath;
      default = "/var/lib/fleetd/spire-nodes.json";
      description = "fleetd's spire-nodes.json (`--file`), watched by the path unit.";
    };
    socket = mkOption {
      type = fl.absPath;
      default = "/tmp/spire-server/private/api.sock";
      description = "The SPIRE server's admin socket (`--socket`); its directory is bound into the sandbox.";
    };
  };

  config = lib.mkIf cfg.enable {
    systemd.services.spire-server-fleet-entries = {
      description = "Apply fleetd's SPIRE eligibility (spire-nodes.json) to the SPIRE server";
      documentation = [ "file:${cfg.package}/share/fleetd/docs/spire.md" ];
      # Ordering only: this unit never starts the server.
      after = [ "spire-server.service" ];
      unitConfig.ConditionPathExists = cfg.file;
      environment.SPIRE_SERVER_SOCKET = cfg.socket;
      serviceConfig = fl.commonSandbox // {
        Type = "oneshot";
        ExecStart = "${cfg.package}/bin/spire-server-fleet-entries --file ${cfg.file} --socket \${SPIRE_SERVER_SOCKET}";
        TimeoutStartSec = "15min";
        # Root, keeping only the capability to open the admin socket and
        # fleetd's file across their owners' permissions.
        User = "root";
        CapabilityBoundingSet = "CAP_DAC_OVERRIDE";
        # The socket's directory (the server recreates the socket), and of
        # /var/lib only the one file read.
        BindPaths = "-${dirOf cfg.socket}";
        TemporaryFileSystem = "/var/lib:ro";
        BindReadOnlyPaths = cfg.file;
        PrivateDevices = true;
        PrivateNetwork = true;
        RestrictAddressFamilies = "AF_UNIX";
      };
    };
    # fleetd renames a complete file into place; PathChanged sees it.
    systemd.paths.spire-server-fleet-entries = {
      description = "Watch fleetd's spire-nodes.json for the SPIRE applier";
      documentation = [ "file:${cfg.package}/share/fleetd/docs/spire.md" ];
      wantedBy = [ "paths.target" ];
      pathConfig = {
        PathChanged = cfg.file;
        Unit = "spire-server-fleet-entries.service";
      };
    };
  };
}
