# terraform/netbox/folly: the NetBox side of fleetd's inventory.
#
# One declaration, two readers: the nodes file (docs/nodes-file.md) is read
# here with yamldecode and by fleetd's file inventory; with NetBox as the
# inventory, this module writes it into NetBox as the custom fields fleetd
# reads (docs/netbox.md, "What fleetd reads").
#
# What fleetd writes (status, ek_hash, ek_hash_ecc) and what the owner sets
# (desired_action) are set at creation at most and then ignored, so a plan
# never reverts them. The binding (approved_ek_hash, approved_ek_hash_ecc) is
# Terraform's: apply it as the NetBox user fleetd.yaml names as
# binding_author.

locals {
  nodes_doc = yamldecode(file(var.nodes_file))
  nodes     = { for n in local.nodes_doc.nodes : n.name => n }

  # The custom fields fleetd reads on dcim.device, with the type fleetd
  # accepts (docs/netbox.md). from_nodes_file: the nodes file declares it and
  # this module writes it; false: fleetd alone writes it.
  custom_fields = {
    class = {
      type = "text", from_nodes_file = true, regex = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$"
      description = "fleetd: the machine class (a class in fleetd.yaml's classes)"
    }
    install_disk = {
      type = "text", from_nodes_file = true, regex = "^/dev/[^ ]+$"
      description = "fleetd: the device path Talos installs to"
    }
    install_disk_serial = {
      type = "text", from_nodes_file = true, regex = null
      description = "fleetd: the serial of the install disk"
    }
    bmc_type = {
      type = "text", from_nodes_file = true, regex = "^[A-Za-z0-9][A-Za-z0-9._-]*$"
      description = "fleetd: the BMC kind (ipmi, redfish, ...)"
    }
    tpm_version = {
      type = "text", from_nodes_file = true, regex = "^[0-9.]+$"
      description = "fleetd: the TPM version, such as 2.0"
    }
    amt = {
      type = "boolean", from_nodes_file = true, regex = null
      description = "fleetd: the machine has Intel AMT"
    }
    secure_boot_expected = {
      type = "boolean", from_nodes_file = true, regex = null
      description = "fleetd: UEFI Secure Boot must be on"
    }
    expected_port = {
      type = "text", from_nodes_file = true, regex = null
      description = "fleetd: the LLDP port the machine must report"
    }
    approved_ek_hash = {
      type = "text", from_nodes_file = true, regex = "^[0-9a-f]{64}$"
      description = "fleetd binding: SHA-256 of the RSA EK's SubjectPublicKeyInfo (fleetctl ek hash)"
    }
    approved_ek_hash_ecc = {
      type = "text", from_nodes_file = true, regex = "^[0-9a-f]{64}$"
      description = "fleetd binding: SHA-256 of the ECC EK's SubjectPublicKeyInfo (fleetctl ek hash)"
    }
    ek_hash = {
      type = "text", from_nodes_file = false, regex = "^[0-9a-f]{64}$"
      description = "written by fleetd: the RSA EK it proved (authorizes nothing)"
    }
    ek_hash_ecc = {
      type = "text", from_nodes_file = false, regex = "^[0-9a-f]{64}$"
      description = "written by fleetd: the ECC EK it proved (authorizes nothing)"
    }
    desired_action = {
      type = "text", from_nodes_file = true, regex = "^(none|provision)$"
      description = "set by the machine's owner: none or provision"
    }
  }

  written_fields = [for k, f in local.custom_fields : k if f.from_nodes_file]

  # netbox_device's status takes NetBox's built-in values; quarantined is
  # fleetd's own and is never declared in a new device.
  provider_statuses = ["offline", "active", "planned", "staged", "failed", "inventory", "decommissioning"]
}

resource "netbox_custom_field" "fleetd" {
  for_each = local.custom_fields

  name             = each.key
  type             = each.value.type
  content_types    = ["dcim.device"]
  label            = each.key
  description      = each.value.description
  group_name       = "fleetd"
  validation_regex = each.value.regex
  weight           = 100
}

resource "netbox_device" "node" {
  for_each = local.nodes

  name           = each.key
  serial         = each.value.serial
  status         = each.value.status
  site_id        = var.site_id
  role_id        = var.role_id
  device_type_id = lookup(var.device_type_ids, each.value.class, var.device_type_id)
  tags           = var.tags

  # A value left out or "" in the nodes file is "not declared": not sent.
  # Booleans become "true"/"false" (custom_fields is a map of strings).
  custom_fields = {
    for k in local.written_fields : k => tostring(each.value[k])
    if try(each.value[k], null) != null && try(each.value[k], "") != ""
  }

  depends_on = [netbox_custom_field.fleetd]

  lifecycle {
    # fleetd writes status, ek_hash and ek_hash_ecc; the owner sets
    # desired_action: a plan must never revert them.
    ignore_changes = [
      status,
      custom_fields["ek_hash"],
      custom_fields["ek_hash_ecc"],
      custom_fields["desired_action"],
    ]

    precondition {
      condition     = contains(local.provider_statuses, each.value.status)
      error_message = "node ${each.key}: status ${each.value.status} cannot be given to a new NetBox device (quarantined is set by fleetd)."
    }
  }
}
