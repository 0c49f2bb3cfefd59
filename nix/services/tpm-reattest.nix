# nix/services/tpm-reattest.nix: homelab.tpmReattest, for the nodes: the
# hourly re-check of this running node by fleetd (tpm-reattest/README.md),
# the service and timer of tpm-reattest/tpm-reattest.{service,timer} with
# the same sandbox; fleetd's URL comes from an option instead of
# /etc/fleet/tpm-reattest.env.
{
  config,
  lib,
  pkgs,
  ...
}:
let
  cfg = config.homelab.tpmReattest;
  fl = import ../lib.nix lib;
  inherit (lib) mkOption types;
  file = description: default: mkOption { type = fl.absPath; inherit default description; };
in
{
  options.homelab.tpmReattest = {
    enable = lib.mkEnableOption "tpm-reattest, this node's hourly TPM re-check by fleetd";
    package = lib.mkPackageOption pkgs "fleetd" { extraDescription = "It must provide bin/tpm-reattest."; };
    url = mkOption {
      type = fl.httpsUrl;
      example = "https://fleetd.example:8443";
      description = "fleetd's URL (`--url`).";
    };
    caFile = file "The CA fleetd's TLS certificate is checked against (`--ca`)." "/etc/fleet/ca.pem";
    lakCert = file "The LAK certificate tink-attest stored at admission (`--lak-cert`); without it the service does not start." "/var/lib/fleet/lak.pem";
    ldevidCert = file "The LDevID certificate (`--ldevid-cert`)." "/var/lib/fleet/ldevid.pem";
    onCalendar = mkOption {
      type = types.str;
      default = "hourly";
      description = "When the check runs (the timer's OnCalendar=).";
    };
  };

  config = lib.mkIf cfg.enable {
    systemd.services.tpm-reattest = {
      description = "tpm-reattest: prove this node's boot to fleetd with its TPM";
      documentation = [ "file:${cfg.package}/share/fleetd/docs/reattest.md" ];
      wants = [ "network-online.target" ];
      after = [ "network-online.target" ];
      unitConfig.ConditionPathExists = cfg.lakCert;
      serviceConfig = fl.commonSandbox // {
        Type = "oneshot";
        ExecStart = lib.escapeShellArgs [
          "${cfg.package}/bin/tpm-reattest"
          "--url"
          cfg.url
          "--ca"
          "${cfg.caFile}"
          "--lak-cert"
          "${cfg.lakCert}"
          "--ldevid-cert"
          "${cfg.ldevidCert}"
        ];
        TimeoutStartSec = "10min";
        # root without capabilities: the event log in securityfs and
        # /dev/tpmrm0 need none.
        User = "root";
        CapabilityBoundingSet = "";
        # The TPM and nothing else of /dev (PrivateDevices would hide it).
        DevicePolicy = "closed";
        DeviceAllow = "/dev/tpmrm0 rw";
        # A renewal replaces the two certificates there.
        ReadWritePaths = "/var/lib/fleet";
        PrivateMounts = true;
        # HTTPS to fleetd; AF_UNIX for lldpcli's socket to lldpd.
        RestrictAddressFamilies = "AF_INET AF_INET6 AF_UNIX";
      };
    };
    # The delay spreads a fleet's checks over a quarter hour; Persistent
    # catches up on a check missed while the node was down.
    systemd.timers.tpm-reattest = {
      description = "tpm-reattest: hourly TPM re-check of this node by fleetd";
      documentation = [ "file:${cfg.package}/share/fleetd/docs/reattest.md" ];
      wantedBy = [ "timers.target" ];
      timerConfig = {
        OnCalendar = cfg.onCalendar;
        RandomizedDelaySec = "15min";
        AccuracySec = "1min";
        Persistent = true;
        Unit = "tpm-reattest.service";
      };
    };
  };
}
