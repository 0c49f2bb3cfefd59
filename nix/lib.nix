# nix/lib.nix: what the modules under nix/services/ share: fleetd's rules
# for paths and names as option types, the YAML renderer for fleetd.yaml,
# and the sandbox the three units have in common. Imported as
# `import ../lib.nix lib`; it needs nothing but nixpkgs' lib.
lib:
let
  inherit (lib)
    types
    concatStringsSep
    concatMapStringsSep
    mapAttrsToList
    filterAttrs
    isAttrs
    isList
    isBool
    isInt
    isString
    isPath
    hasPrefix
    toLower
    elem
    ;

  # fleetd's path rule (fleetd/config/config.c, path_ok): absolute, no `.`
  # or `..` component, no `//`, no space.
  pathOk =
    p:
    hasPrefix "/" p
    && builtins.match ".*/\\.\\.?(/.*)?" p == null
    && builtins.match ".*//.*" p == null
    && builtins.match ".* .*" p == null;

  inStore = p: hasPrefix "${builtins.storeDir}/" p || p == builtins.storeDir;

  # An absolute path fleetd accepts, given as a string or a Nix path (a
  # Nix path is copied into the store: for public files only).
  absPath = types.addCheck (types.either types.str types.path) (p: pathOk "${toString p}") // {
    description = "absolute path (no `.`, `..`, `//` or spaces)";
  };

  # A secret's location: an absolute path *string* outside the Nix store.
  # A Nix path value is refused (it would copy the secret into the
  # world-readable store), and so is a string naming the store.
  secretPath = types.addCheck types.str (p: pathOk p && !inStore p) // {
    description = "absolute path string outside the Nix store (a secret's file, never in the store)";
  };

  # fleetd's class and profile names (config.c, name_ok): letters, digits,
  # `.`, `-`, `_`, beginning with a letter or digit; 63 at most.
  name = types.strMatching "[A-Za-z0-9][A-Za-z0-9._-]{0,62}";

  # A SPIFFE trust domain as fleet_spire_trust_domain_ok has it.
  trustDomain = types.strMatching "[a-z0-9._-]+" // {
    description = "SPIFFE trust domain (a-z, 0-9, `.`, `-`, `_`)";
  };

  httpsUrl = types.strMatching "https://[^ @?#]+" // {
    description = "https:// URL without credentials, query or fragment";
  };

  # The values fleetd.yaml can hold (as nixpkgs' formats.json has it); null
  # means "leave the key out".
  yamlValue =
    let
      t = types.nullOr (
        types.oneOf [
          types.bool
          types.int
          types.str
          types.path
          (types.attrsOf t)
          (types.listOf t)
        ]
      );
    in
    t // { description = "YAML value"; };

  # A section of fleetd.yaml in fleetd's key names: null (left out) or a
  # set of the typed options given and any other key passed through.
  section =
    description: options:
    lib.mkOption {
      default = null;
      inherit description;
      type = types.nullOr (
        types.submodule {
          freeformType = types.attrsOf yamlValue;
          inherit options;
        }
      );
    };

  # ---- YAML -----------------------------------------------------------------
  # Block style, keys sorted. fleetd reads YAML strictly (docs/configuration.md):
  # numbers and booleans plain, so strings that could read as anything but a
  # string are double-quoted (JSON's escapes are YAML's); `inventory.kind`
  # must be plain, and `netbox`/`file` are.
  plainOk =
    s:
    builtins.match "[A-Za-z_/][A-Za-z0-9_./:@+-]*" s != null
    && builtins.match ".*:$" s == null
    && !elem (toLower s) [ "true" "false" "yes" "no" "on" "off" "y" "n" "null" ];

  scalar =
    v:
    if isBool v then
      (if v then "true" else "false")
    else if isInt v then
      toString v
    else if isPath v then
      scalar "${v}"
    else if plainOk v then
      v
    else
      builtins.toJSON v;

  dropNulls =
    v:
    if isAttrs v && !(v ? outPath) then
      lib.mapAttrs (_: dropNulls) (filterAttrs (_: x: x != null) v)
    else if isList v then
      map dropNulls (builtins.filter (x: x != null) v)
    else
      v;

  indent = s: concatMapStringsSep "\n" (l: if l == "" then l else "  " + l) (lib.splitString "\n" s);

  block =
    v:
    if isAttrs v && !(v ? outPath) then
      (
        if v == { } then
          "{}"
        else
          concatStringsSep "\n" (
            mapAttrsToList (
              k: x:
              let
                key = scalar k;
              in
              if (isAttrs x && !(x ? outPath) && x != { }) || (isList x && x != [ ]) then
                "${key}:\n${indent (block x)}"
              else
                "${key}: ${block x}"
            ) v
          )
      )
    else if isList v then
      (if v == [ ] then "[]" else concatMapStringsSep "\n" (x: "- " + lib.removePrefix "  " (indent (block x))) v)
    else
      scalar v;

  toYAML = v: block (dropNulls v) + "\n";

  # ---- the sandbox ----------------------------------------------------------
  # The [Service] directives fleetd.service, tpm-reattest.service and
  # spire-server-fleet-entries.service all carry, with the same values
  # (tests/nix/test_nix_module.sh holds each unit here to its file in the
  # tree). Each unit adds its own; docs/operations.md says why each is there.
  commonSandbox = {
    NoNewPrivileges = true;
    AmbientCapabilities = "";
    UMask = "0077";
    ProtectSystem = "strict";
    ProtectHome = true;
    PrivateTmp = true;
    PrivateIPC = true;
    ProtectKernelTunables = true;
    ProtectKernelModules = true;
    ProtectKernelLogs = true;
    ProtectControlGroups = true;
    ProtectClock = true;
    ProtectHostname = true;
    ProtectProc = "invisible";
    ProcSubset = "pid";
    RestrictNamespaces = true;
    RestrictRealtime = true;
    RestrictSUIDSGID = true;
    LockPersonality = true;
    MemoryDenyWriteExecute = true;
    RemoveIPC = true;
    KeyringMode = "private";
    SystemCallArchitectures = "native";
    SystemCallFilter = [
      "@system-service"
      "~@privileged @resources"
    ];
    SystemCallErrorNumber = "EPERM";
  };
in
{
  inherit
    pathOk
    inStore
    absPath
    secretPath
    name
    trustDomain
    httpsUrl
    yamlValue
    section
    toYAML
    commonSandbox
    ;
}
