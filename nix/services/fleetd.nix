# nix/services/fleetd.nix: fleetd on NixOS (homelab.fleetd), as the spec's
# site runs it: the configuration rendered to /etc/fleetd/fleetd.yaml
# (docs/configuration.md, every key), the service sandboxed exactly as
# fleetd/fleetd.service is, and the fleetd user and group that
# fleetd/fleetd.sysusers declares. nix/README.md and docs/nixos.md say how
# to use it. The NetBox token never enters the store: only its path does.
{
  config,
  lib,
  pkgs,
  ...
}:
let
  cfg = config.homelab.fleetd;
  fl = import ../lib.nix lib;
  inherit (lib)
    mkOption
    mkEnableOption
    mkPackageOption
    mkIf
    types
    literalExpression
    ;

  configFile = "fleetd/fleetd.yaml";
  nullOr = t: default: description: mkOption { type = types.nullOr t; inherit default description; };
  # An enum whose first value is fleetd's default.
  oneOf = values: description: mkOption {
    type = types.enum values;
    default = builtins.head values;
    inherit description;
  };
in
{
  options.homelab.fleetd = {
    enable = mkEnableOption "fleetd, the TPM-attested admission of bare-metal machines";

    package = mkPackageOption pkgs "fleetd" {
      extraDescription = "It must provide bin/fleetd.";
    };

    listen = {
      address = mkOption {
        type = types.str;
        default = "::";
        description = "IPv4 or IPv6 address the HTTPS API listens on (`::`: every address). Config key `listen.address`.";
      };
      port = mkOption {
        type = types.ints.between 1 65535;
        default = 8443;
        description = "TCP port (`listen.port`). Below 1024 needs CAP_NET_BIND_SERVICE, which the unit does not grant.";
      };
    };

    tls = {
      cert = mkOption {
        type = fl.absPath;
        description = "PEM certificate chain fleetd serves (`tls.cert`).";
      };
      key = mkOption {
        type = fl.secretPath;
        description = "Its private key (`tls.key`): a path string outside the store.";
      };
    };

    stateDir = mkOption {
      type = types.strMatching "/var/lib/[A-Za-z0-9._-]+";
      default = "/var/lib/fleetd";
      description = "fleetd's state (`state_dir`): the store, verdicts.jsonl, spire-nodes.json. A directory of /var/lib, made by systemd's StateDirectory=.";
    };

    rootsDir = mkOption {
      type = fl.absPath;
      default = "/etc/fleetd/roots";
      example = literalExpression "./roots";
      description = "EK manufacturer root certificates (`roots_dir`); a Nix path is copied into the store (they are public).";
    };

    profilesDir = mkOption {
      type = fl.absPath;
      default = "/etc/fleetd/profiles";
      description = "Boot-policy profiles (`profiles_dir`, docs/policy.md).";
    };

    classes = mkOption {
      type = types.addCheck (types.attrsOf fl.name) (c: c != { } && builtins.length (builtins.attrNames c) <= 64 && builtins.all (n: builtins.match "[A-Za-z0-9][A-Za-z0-9._-]{0,62}" n != null) (builtins.attrNames c));
      example = {
        worker = "worker.yaml";
      };
      description = "Machine class to its profile's file name in profilesDir (`classes`): 1 to 64, names and files letters, digits, `.`, `-`, `_`.";
    };

    inventory.kind = mkOption {
      type = types.enum [
        "netbox"
        "file"
      ];
      description = "Where fleetd reads devices and bindings (`inventory.kind`).";
    };

    netbox = {
      url = nullOr fl.httpsUrl null "NetBox's API base (`inventory.netbox.url`), https only: the token goes with every request.";
      tokenFile = nullOr fl.secretPath null "File holding the NetBox API token (`inventory.netbox.token_file`), mode 0600 and owned by fleetd. A path string outside the Nix store; the token itself is never in the store.";
      caFile = nullOr fl.absPath null "PEM CA bundle for NetBox's certificate (`inventory.netbox.ca_file`); null: the system roots.";
    };

    nodesFile = nullOr fl.absPath null "The nodes file (`inventory.file.path`, docs/nodes-file.md) with inventory.kind = \"file\".";

    bindingAuthor = nullOr types.nonEmptyStr null "The NetBox user Terraform writes the binding as (`binding_author`): a binding whose latest change came from anyone else is refused. Required with NetBox; with the file inventory null or \"nodes-file\".";

    spire.trustDomain = nullOr fl.trustDomain null "SPIFFE trust domain written into spire-nodes.json (`spire.trust_domain`); null: no spire-nodes.json.";

    join = fl.section "The `join` section (POST /v1/join, docs/attestors.md), in fleetd's own key names; null: no join service. Keys not typed here pass through as given." {
      trust_domain = mkOption {
        type = fl.trustDomain;
        description = "`join.trust_domain`: node certificates are spiffe://<trust_domain>/<role>/<node>.";
      };
      seal_key = nullOr fl.secretPath null "`join.seal_key` (fleetctl join init); null: <stateDir>/join/seal.key.";
      discovery_approval = oneOf [ "never" "unknown-machines" "always" ] "`join.discovery_approval`.";
      tpm = fl.section "`join.tpm`: the tpm attestor, on when set." {
        challenge_key = nullOr fl.secretPath null "`join.tpm.challenge_key`, a secret; null: <stateDir>/join/tpm-challenge.key.";
        allow_uncertified_ek = mkOption {
          type = types.bool;
          default = false;
          description = "`join.tpm.allow_uncertified_ek`: never in production (a warning says so).";
        };
        node_key = oneOf [ "certified" "any" ] "`join.tpm.node_key`.";
        role = oneOf [ "node" "site" ] "`join.tpm.role`.";
      };
    };

    settings = mkOption {
      type = types.submodule { freeformType = types.attrsOf fl.yamlValue; };
      default = { };
      example = {
        sessions.ttl_seconds = 900;
        verdict_log.max_files = 10;
      };
      description = ''
        fleetd.yaml itself, in fleetd's key names (docs/configuration.md);
        the typed options above are written into it, and any other key
        (sessions, certificates, verdict_log, pass, metrics, http,
        provision, listen.rate_*) is given here. fleetd refuses an unknown
        key at start (`fleetd --check-config`).
      '';
    };

    configText = mkOption {
      type = types.str;
      readOnly = true;
      description = "The rendered fleetd.yaml (/etc/fleetd/fleetd.yaml).";
    };
  };

  config = mkIf cfg.enable {
    homelab.fleetd.settings = {
      listen = { inherit (cfg.listen) address port; };
      tls = { inherit (cfg.tls) cert key; };
      state_dir = cfg.stateDir;
      roots_dir = cfg.rootsDir;
      profiles_dir = cfg.profilesDir;
      inherit (cfg) classes;
      inventory =
        {
          inherit (cfg.inventory) kind;
        }
        // lib.optionalAttrs (cfg.inventory.kind == "netbox") {
          netbox = {
            inherit (cfg.netbox) url;
            token_file = cfg.netbox.tokenFile;
            ca_file = cfg.netbox.caFile;
          };
        }
        // lib.optionalAttrs (cfg.inventory.kind == "file") { file.path = cfg.nodesFile; };
      binding_author = mkIf (cfg.bindingAuthor != null) cfg.bindingAuthor;
      spire = mkIf (cfg.spire.trustDomain != null) { trust_domain = cfg.spire.trustDomain; };
      join = mkIf (cfg.join != null) cfg.join;
    };

    homelab.fleetd.configText = fl.toYAML cfg.settings;

    assertions = [
      {
        assertion = cfg.inventory.kind != "netbox" || (cfg.netbox.url != null && cfg.netbox.tokenFile != null);
        message = "homelab.fleetd.netbox.url and homelab.fleetd.netbox.tokenFile are required with homelab.fleetd.inventory.kind = \"netbox\".";
      }
      {
        assertion = cfg.inventory.kind != "netbox" || cfg.bindingAuthor != null;
        message = "homelab.fleetd.bindingAuthor (the user Terraform writes NetBox as) is required with the netbox inventory; only the operator knows it.";
      }
      {
        assertion = cfg.inventory.kind != "file" || cfg.nodesFile != null;
        message = "homelab.fleetd.nodesFile is required with homelab.fleetd.inventory.kind = \"file\".";
      }
      {
        assertion = cfg.inventory.kind != "file" || cfg.bindingAuthor == null || cfg.bindingAuthor == "nodes-file";
        message = "homelab.fleetd.bindingAuthor must be null or \"nodes-file\" with the file inventory: the nodes file is the binding's author.";
      }
      {
        assertion = cfg.inventory.kind == "netbox" || cfg.netbox.tokenFile == null && cfg.netbox.url == null;
        message = "homelab.fleetd.netbox.* is set but homelab.fleetd.inventory.kind is \"file\".";
      }
    ];

    warnings = lib.optional (cfg.join != null && cfg.join.tpm != null && cfg.join.tpm.allow_uncertified_ek)
      "homelab.fleetd.join.tpm.allow_uncertified_ek admits EKs no manufacturer certified: never in production.";

    # fleetd.sysusers: a static user, not DynamicUser (the state outlives
    # the service); operators who run fleetctl join the group.
    users.users.fleetd = {
      isSystemUser = true;
      group = "fleetd";
      description = "fleetd fleet admission daemon";
      home = cfg.stateDir;
    };
    users.groups.fleetd = { };

    # A copy, not the store's symbolic link: fleetd reads its configuration
    # only from a regular file owned by root or fleetd that nobody else can
    # write (docs/files.md).
    environment.etc.${configFile} = {
      text = cfg.configText;
      mode = "0640";
      user = "root";
      group = "fleetd";
    };

    systemd.services.fleetd = {
      description = "fleetd: TPM-attested admission of bare-metal machines";
      documentation = [ "file:${cfg.package}/share/fleetd/docs/operations.md" ];
      wants = [ "network-online.target" ];
      after = [ "network-online.target" ];
      wantedBy = [ "multi-user.target" ];
      restartTriggers = [ cfg.configText ];
      serviceConfig = fl.commonSandbox // {
        Type = "notify";
        NotifyAccess = "main";
        ExecStart = "${cfg.package}/bin/fleetd --config /etc/${configFile}";
        WatchdogSec = "30s";
        Restart = "on-failure";
        RestartSec = "5s";
        TimeoutStartSec = "60s";
        TimeoutStopSec = "30s";
        User = "fleetd";
        Group = "fleetd";
        DynamicUser = false;
        StateDirectory = lib.removePrefix "/var/lib/" cfg.stateDir;
        StateDirectoryMode = "0750";
        ConfigurationDirectory = "fleetd";
        ConfigurationDirectoryMode = "0750";
        # No privilege at all (port 8443); for 443 add
        # CAP_NET_BIND_SERVICE to both in your own configuration.
        CapabilityBoundingSet = "";
        PrivateDevices = true;
        RestrictAddressFamilies = "AF_INET AF_INET6 AF_UNIX";
        LimitNOFILE = 4096;
      };
    };
  };
}
