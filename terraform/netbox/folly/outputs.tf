output "device_ids" {
  description = "NetBox device id per node name."
  value       = { for name, d in netbox_device.node : name => d.id }
}

output "custom_field_ids" {
  description = "NetBox custom field id per field name."
  value       = { for name, f in netbox_custom_field.fleetd : name => f.id }
}

output "node_names" {
  description = "The nodes read from the nodes file, sorted."
  value       = sort(keys(local.nodes))
}
