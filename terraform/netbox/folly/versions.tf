terraform {
  required_version = ">= 1.5.0"

  required_providers {
    netbox = {
      # The schema pages this module is checked against are this provider's
      # (e-breuninger/terraform-provider-netbox, docs/resources/).
      source  = "e-breuninger/netbox"
      version = "~> 4.0"
    }
  }
}
