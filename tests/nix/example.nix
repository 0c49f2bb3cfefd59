# tests/nix/example.nix: a site as docs/nixos.md shows it: fleetd with
# NetBox, SPIRE and the join service, tpm-reattest and the SPIRE applier on
# the same host for the test's sake. Every path is under /run/fleetd-nix-test,
# which test_nix_module.sh replaces with its temporary directory before it
# runs `fleetd --check-config` on the rendered fleetd.yaml.
let
  d = "/run/fleetd-nix-test";
in
{
  homelab.fleetd = {
    enable = true;
    listen = {
      address = "127.0.0.1";
      port = 8443;
    };
    tls = {
      cert = "${d}/tls/fleetd.crt";
      key = "${d}/tls/fleetd.key";
    };
    stateDir = "/var/lib/fleetd";
    rootsDir = "${d}/roots";
    profilesDir = "${d}/profiles";
    classes.worker = "worker.yaml";
    inventory.kind = "netbox";
    netbox = {
      url = "https://netbox.example.org/";
      tokenFile = "${d}/netbox.token";
    };
    bindingAuthor = "terraform";
    spire.trustDomain = "folly.example";
    join = {
      trust_domain = "folly.example";
      seal_key = "${d}/join/seal.key";
      discovery_approval = "unknown-machines";
      x509pop_min_interval_seconds = 300;
      tpm = {
        challenge_key = "${d}/join/tpm-challenge.key";
        retry_after_seconds = 10;
      };
    };
    settings = {
      # state_dir is where systemd puts it; the test points the rest here.
      ca_dir = "${d}/ca";
      listen.rate_burst = 40;
      sessions.ttl_seconds = 900;
      verdict_log.max_files = 10;
      metrics.enabled = true;
    };
  };
  homelab.tpmReattest = {
    enable = true;
    url = "https://fleetd.folly.example:8443";
  };
  homelab.spireFleetEntries.enable = true;
}
